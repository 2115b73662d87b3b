// The stored-name type and rules (`<workflow_name>_<uuid>`) live in @loom/domain, shared with the scheduler and the
// executor; what is here is only how the storage directory names its files.

const FILE_SUFFIXES = ['.workflow.json', '.scheduler.json', '.json'] as const;

/** The stored name a file of the storage directory belongs to, and which of the three files it is. */
export function classifyFile(fileName: string): { stem: string; kind: 'workflow' | 'schedule' | 'metadata' } | undefined {
  if (fileName.startsWith('.')) return undefined;
  for (const suffix of FILE_SUFFIXES) {
    if (!fileName.endsWith(suffix) || fileName.length === suffix.length) continue;
    const stem = fileName.slice(0, -suffix.length);
    return { stem, kind: suffix === '.workflow.json' ? 'workflow' : suffix === '.scheduler.json' ? 'schedule' : 'metadata' };
  }
  return undefined;
}
