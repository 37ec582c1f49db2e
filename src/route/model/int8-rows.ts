/** Largest int8 magnitude used; -128 is left out so the range is symmetric. */
const INT8_LIMIT = 127;

/**
 * Rounds each row of `weights` (rows of `width`) to int8 steps of its largest magnitude / 127,
 * records the scales, and returns the steps. Per-row rather than global scales keep rare, strong
 * features and common, weak ones equally precise; stored as int8, weights take a quarter of float32.
 */
export function quantizeRows(weights: Float32Array, width: number, scales: Float32Array): Int8Array {
  const steps = new Int8Array(weights.length);
  for (let row = 0; row < scales.length; row++) {
    const start = row * width;
    let largest = 0;
    for (let index = start; index < start + width; index++) {
      const magnitude = Math.abs(weights[index] as number);
      if (magnitude > largest) largest = magnitude;
    }
    const scale = Math.fround(largest / INT8_LIMIT);
    scales[row] = scale;
    if (scale === 0) continue;
    for (let index = start; index < start + width; index++) {
      steps[index] = Math.round((weights[index] as number) / scale);
    }
  }
  return steps;
}
