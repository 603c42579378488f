/**
 * The quantiles the bench and the demo report (p50, p99, the median of repeated runs): for each `q` in
 * [0, 1), the value at index ⌊n·q⌋ of `values` sorted ascending. Sorts a copy once; `values` is left as it is.
 */
export function quantiles(values: readonly number[], ...qs: number[]): number[] {
  if (values.length === 0) throw new Error("quantiles of no values");
  const sorted = [...values].sort((a, b) => a - b);
  return qs.map((q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!);
}
