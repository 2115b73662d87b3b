// PDFs for tests and benchmarks: small valid documents with known text, an encrypted one, bombs.
import { randomBytes } from 'node:crypto';

/** What `makePdf` writes. */
export interface PdfSpec {
  /** One entry per page: its lines of text. */
  readonly pages: ReadonlyArray<readonly string[]>;
  readonly title?: string;
  readonly author?: string;
  /** Adds a standard security handler whose passwords nothing knows: opening needs a password. */
  readonly encrypted?: boolean;
  /** Lists every page this many times in the page tree (a page-count bomb); default 1. */
  readonly repeatKids?: number;
  /** Raw PDF text added to the document information dictionary. */
  readonly extraInfo?: string;
}

/** Writes a small valid PDF 1.4 with Helvetica text, one content stream per page, and a correct xref table. */
export function makePdf(spec: PdfSpec): Buffer {
  const objects: string[] = [];
  const add = (body: string): number => {
    objects.push(body);
    return objects.length;
  };
  const catalog = add('');
  const pagesId = add('');
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const pageIds: number[] = [];
  for (const lines of spec.pages) {
    const text = lines.map((line, index) => `BT /F1 12 Tf 72 ${720 - index * 16} Td (${escape(line)}) Tj ET`).join('\n');
    const content = add(`<< /Length ${Buffer.byteLength(text, 'latin1')} >>\nstream\n${text}\nendstream`);
    pageIds.push(add(`<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesId} 0 R >>`;
  const repeat = spec.repeatKids ?? 1;
  const kids = Array.from({ length: repeat }, () => pageIds.map((id) => `${id} 0 R`).join(' ')).join(' ');
  objects[pagesId - 1] = `<< /Type /Pages /Kids [${kids}] /Count ${pageIds.length * repeat} >>`;
  const infoFields = [
    spec.title === undefined ? '' : `/Title (${escape(spec.title)})`,
    spec.author === undefined ? '' : `/Author (${escape(spec.author)})`,
    '/Producer (loom tests)',
    '/CreationDate (D:20250102030405Z)',
    spec.extraInfo ?? '',
  ];
  const info = add(`<< ${infoFields.join(' ')} >>`);
  const hex = (bytes: Buffer) => `<${bytes.toString('hex')}>`;
  const encrypt = spec.encrypted === true ? add(`<< /Filter /Standard /V 1 /R 2 /O ${hex(randomBytes(32))} /U ${hex(randomBytes(32))} /P -44 >>`) : undefined;

  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${index + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  const id = hex(randomBytes(16));
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R /Info ${info} 0 R /ID [${id} ${id}]${encrypt === undefined ? '' : ` /Encrypt ${encrypt} 0 R`} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

function escape(text: string): string {
  return text.replace(/[\\()]/g, (char) => `\\${char}`);
}
