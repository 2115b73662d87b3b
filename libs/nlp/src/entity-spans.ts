/** An entity span over token positions, end exclusive. */
export interface EntitySpan {
  readonly start: number;
  readonly end: number;
  readonly type: string;
}

/** The entity spans an IOB2 tag sequence marks. */
export function entitySpans(tags: readonly string[]): EntitySpan[] {
  const spans: EntitySpan[] = [];
  let open: { start: number; type: string } | undefined;
  for (let position = 0; position <= tags.length; position++) {
    const tag = tags[position] ?? 'O';
    const continues = open !== undefined && tag === `I-${open.type}`;
    if (open && !continues) {
      spans.push({ start: open.start, end: position, type: open.type });
      open = undefined;
    }
    if (tag !== 'O' && !continues) open = { start: position, type: tag.slice(2) };
  }
  return spans;
}
