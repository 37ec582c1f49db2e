import { SwitchboardError } from './errors.js';

/**
 * Nearest-rank percentile of values already sorted ascending: the smallest value with at least
 * `p`% of the values at or below it. Chosen over linear interpolation because it always returns a
 * latency that was actually observed. `p` is in [0, 100]; `p = 0` gives the minimum.
 *
 * @returns `NaN` for an empty list (there is no such value).
 */
export function percentile(sortedValues: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) {
    throw new SwitchboardError('INVALID_INPUT', `percentile must be between 0 and 100, got ${p}`);
  }
  const count = sortedValues.length;
  if (count === 0) return Number.NaN;
  // Rounding guards against 95/100 × 20 evaluating to 19.000000000000004 and skipping a rank.
  const rank = Math.ceil(Number(((p / 100) * count).toFixed(9)));
  return sortedValues[Math.min(Math.max(rank, 1), count) - 1] as number;
}
