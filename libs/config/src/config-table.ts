import { configKeys } from './config-keys.js';

/** The first and last lines around the generated configuration table in the README. */
export const CONFIG_TABLE_START = '<!-- config-keys: generated from libs/config/src/config-keys.ts by `npm run -w @loom/config readme`; do not edit -->';
export const CONFIG_TABLE_END = '<!-- end of config-keys -->';

/** Text for a table cell: pipes escaped, and angle brackets outside code spans (`<name>` would be read as HTML). */
function cell(text: string): string {
  return text
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ')
    .split('`')
    .map((part, index) => (index % 2 === 0 ? part.replace(/</g, '&lt;').replace(/>/g, '&gt;') : part))
    .join('`');
}

function code(text: string): string {
  return `\`${text}\``;
}

/** The Markdown table of every configuration key (key, environment variable, meaning, default), from the key table. */
export function configTableMarkdown(): string {
  const rows = configKeys.map((row) => `| ${code(row.key)} | ${code(row.env)} | ${cell(row.description)} | ${cell(row.default)} |`);
  return ['| key | environment variable | meaning | default |', '|---|---|---|---|', ...rows].join('\n');
}

/** `text` (the README) with the part between the markers replaced by the generated table; undefined when a marker is missing. */
export function withConfigTable(text: string): string | undefined {
  const start = text.indexOf(CONFIG_TABLE_START);
  const end = text.indexOf(CONFIG_TABLE_END);
  if (start < 0 || end < start) return undefined;
  return `${text.slice(0, start)}${CONFIG_TABLE_START}\n${configTableMarkdown()}\n${text.slice(end)}`;
}
