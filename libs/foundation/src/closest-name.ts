// "did you mean ...?": the known name a mistyped one is closest to, by the optimal string alignment distance
// (Levenshtein with adjacent transpositions), compared without regard to case.

/** Edits (insert, delete, substitute, swap two neighbours) that turn one string into another, ignoring case. */
export function editDistance(one: string, other: string): number {
  const a = one.toLowerCase();
  const b = other.toLowerCase();
  // three rows of the table are enough: a swap looks two rows back
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (before[j - 2] as number) + 1);
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * The candidate a mistyped name most likely meant: the closest one within a third of the name's length (at least one
 * edit, at most three), the first of the closest when several tie; undefined when none is that close.
 */
export function closestName(given: string, candidates: Iterable<string>): string | undefined {
  const allowed = Math.min(3, Math.max(1, Math.floor(given.length / 3)));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(given, candidate);
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}
