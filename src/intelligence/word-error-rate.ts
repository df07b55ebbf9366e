/**
 * Word error rate: the fewest word substitutions, deletions and insertions turning the reference
 * into the hypothesis, divided by the reference's length. Both sides are compared as words only:
 * lower case, punctuation dropped (apostrophes kept), so "Friday." and "friday" are one word.
 */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const expected = words(reference);
  const actual = words(hypothesis);
  if (!expected.length) return actual.length ? 1 : 0;
  // One row of the edit-distance table at a time: memory linear in the hypothesis.
  let previous = Array.from({ length: actual.length + 1 }, (_, j) => j);
  for (let i = 1; i <= expected.length; i++) {
    const row = [i];
    for (let j = 1; j <= actual.length; j++) {
      const substitution = previous[j - 1]! + (expected[i - 1] === actual[j - 1] ? 0 : 1);
      row.push(Math.min(substitution, previous[j]! + 1, row[j - 1]! + 1));
    }
    previous = row;
  }
  return previous[actual.length]! / expected.length;
}

/** 1 − WER, floored at 0 (a hypothesis full of insertions can make the WER exceed 1). */
export function wordAccuracy(reference: string, hypothesis: string): number {
  return Math.max(0, 1 - wordErrorRate(reference, hypothesis));
}

function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[^a-z0-9'\s]+/g, " ")
    .split(/\s+/)
    .filter(Boolean);
}
