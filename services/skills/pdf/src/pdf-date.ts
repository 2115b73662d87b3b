/** `D:20250102030405+01'00'` (a PDF date) → `2025-01-02T02:04:05Z`; a date without zone is read as UTC; null when unreadable. */
export function pdfDate(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const match = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(Z|[+-]\d{2}'?\d{2}'?)?/.exec(value.trim());
  if (match === null) return null;
  const [, year, month = '01', day = '01', hour = '00', minute = '00', second = '00', zone] = match;
  let instant = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  if (zone !== undefined && zone !== 'Z') {
    const digits = zone.slice(1).replace(/'/g, '');
    const sign = zone.startsWith('-') ? -1 : 1;
    instant -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0')) * 60_000;
  }
  return Number.isFinite(instant) ? new Date(instant).toISOString().replace('.000Z', 'Z') : null;
}
