// "Did you mean …?" for the pi-session CLI: the nearest command, option or role to a typo.
// Hand-written (optimal string alignment distance, a dozen lines) rather than a dependency: the
// package's runtime dependencies are the platform binaries only.

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`. */
export function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}

/**
 * The candidate nearest to `word` (case-insensitive), if it is near enough to be a typo of it:
 * at most a third of its length in edits (at least one, at most three), or `word` is the start
 * of exactly one candidate.
 * @param {string} word
 * @param {readonly string[]} candidates
 * @returns {string | undefined}
 */
export function nearest(word, candidates) {
  const w = word.toLowerCase();
  let best;
  let bestD = Infinity;
  for (const c of candidates) {
    const dist = distance(w, c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  if (best !== undefined && bestD <= Math.min(3, Math.max(1, Math.floor(w.length / 3)))) return best;
  const starts = candidates.filter((c) => w.length >= 2 && c.toLowerCase().startsWith(w));
  return starts.length === 1 ? starts[0] : undefined;
}

/** `; did you mean X?` for a typo of one of `candidates`, or "". */
export function didYouMean(word, candidates) {
  const near = nearest(word, candidates);
  return near ? `; did you mean ${near}?` : "";
}
