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
  for (let i = 0; i <= tags.length; i++) {
    const tag = tags[i] ?? 'O';
    const continues = open !== undefined && tag === `I-${open.type}`;
    if (open && !continues) {
      spans.push({ start: open.start, end: i, type: open.type });
      open = undefined;
    }
    if (tag !== 'O' && !continues) open = { start: i, type: tag.slice(2) };
  }
  return spans;
}
