export { pdfDate } from './pdf-date.js';
export { createPdfSkill, MAX_PAGES, pdfSkill, type PdfSkillOptions, WORKER_MEMORY_MB } from './pdf.skill.js';
export { type ParsedPdf, type PdfLimits, PdfParseError, PdfWorkerPool } from './pdf-worker-pool.js';
