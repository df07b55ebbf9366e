/** The `p`th percentile of `sorted` (ascending), nearest rank. */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

/** "n=8 p50 498 ms, p95 930 ms, max 1012 ms": how a bench prints a set of timings. */
export const figures = (values: number[]) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return `n=${sorted.length} p50 ${Math.round(percentile(sorted, 50))} ms, p95 ${Math.round(percentile(sorted, 95))} ms, max ${Math.round(sorted.at(-1) ?? Number.NaN)} ms`;
};
