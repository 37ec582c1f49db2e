// `.ts` imports (rewritten to `.js` by the build) so that network-worker.ts runs from the sources too.
import { seededRandom } from '../../core/seeded-random.ts';
import { quantizeRows } from './int8-rows.ts';
import { readLittleEndian, writeLittleEndian } from './little-endian.ts';

/**
 * A feed-forward network with one hidden layer of rectified units over sparse TF-IDF vectors: the
 * model for routes with many examples each. A linear model scores each n-gram for each route on its
 * own; the hidden layer learns which n-grams go together ("credit" + "limit" + "raise"), which on
 * CLINC150 is worth about a point of in-scope accuracy over the best linear model we found.
 *
 * Weights are int8 with one float32 scale per row (per input feature, per hidden unit), rounded when
 * training ends, so a trained network and the same network read back from disk score bit for bit alike
 * and a loaded model holds a quarter of the memory float32 weights would.
 */

/** A sparse, L2-normalised feature vector over vocabulary indices. */
export interface SparseVector {
  indices: Int32Array;
  values: Float32Array;
}

/** Training knobs of one network. */
export interface HiddenLayerOptions {
  hiddenUnits: number;
  epochs: number;
  /** Initial SGD step size, decayed linearly to 2 % of it. */
  learningRate: number;
  /** Share of hidden units switched off at each training step. */
  dropout: number;
  /** Share of a text's input features switched off at each training step (a text seen with words missing). */
  inputDropout: number;
  seed: number;
  /** Output gradients smaller than this are skipped; after the first epoch that is most labels. */
  gradientFloor: number;
}

/** The rate never decays below this share of the initial one, so the last epoch still learns. */
const LAST_RATE_SHARE = 0.02;
/** Scale of the initial input weights: a CLINC-sized text has about 30 features of weight ~0.2. */
const INPUT_INIT = 0.5 * Math.sqrt(2 / 30);

/** The int8 weights of a trained network with their per-row scales, and its float32 biases. */
export interface NetworkWeights {
  /** featureCount × hiddenUnits, int8 steps of `inputScales[feature]`. */
  inputWeights: Int8Array;
  inputScales: Float32Array;
  hiddenBias: Float32Array;
  /** hiddenUnits × classCount, int8 steps of `outputScales[unit]`. */
  outputWeights: Int8Array;
  outputScales: Float32Array;
  outputBias: Float32Array;
}

/** One trained network; `scoreInto` gives its softmax over the labels for one vector. */
export class HiddenLayerNetwork {
  readonly featureCount: number;
  readonly hiddenUnits: number;
  readonly classCount: number;
  private readonly inputWeights: Int8Array;
  private readonly inputScales: Float32Array;
  private readonly hiddenBias: Float32Array;
  private readonly outputWeights: Int8Array;
  private readonly outputScales: Float32Array;
  private readonly outputBias: Float32Array;
  private readonly hidden: Float64Array;

  constructor(featureCount: number, hiddenUnits: number, classCount: number, weights: NetworkWeights) {
    this.featureCount = featureCount;
    this.hiddenUnits = hiddenUnits;
    this.classCount = classCount;
    this.inputWeights = weights.inputWeights;
    this.inputScales = weights.inputScales;
    this.hiddenBias = weights.hiddenBias;
    this.outputWeights = weights.outputWeights;
    this.outputScales = weights.outputScales;
    this.outputBias = weights.outputBias;
    this.hidden = new Float64Array(hiddenUnits);
  }

  /**
   * Trains one network with class-balanced softmax cross-entropy: every label carries the same total
   * weight, as in the linear model. `onEpoch` hears of each finished pass.
   */
  static train(
    vectors: readonly SparseVector[],
    targets: Int32Array,
    featureCount: number,
    classCount: number,
    options: HiddenLayerOptions,
    onEpoch?: (finished: number) => void,
  ): HiddenLayerNetwork {
    const units = options.hiddenUnits;
    const random = seededRandom(options.seed);
    const inputWeights = new Float32Array(featureCount * units);
    for (let index = 0; index < inputWeights.length; index++) {
      inputWeights[index] = (random() * 2 - 1) * INPUT_INIT;
    }
    const outputWeights = new Float32Array(units * classCount);
    const outputInit = 0.5 * Math.sqrt(2 / units);
    for (let index = 0; index < outputWeights.length; index++) {
      outputWeights[index] = (random() * 2 - 1) * outputInit;
    }
    const hiddenBias = new Float32Array(units);
    const outputBias = new Float32Array(classCount);
    const trainer = new Trainer(options, classCount, { inputWeights, hiddenBias, outputWeights, outputBias });
    const labelWeights = balancedLabelWeights(targets, classCount);
    const order = Int32Array.from(vectors.keys());
    const totalSteps = Math.max(1, options.epochs * vectors.length);
    let step = 0;
    for (let epoch = 0; epoch < options.epochs; epoch++) {
      shuffle(order, random);
      for (const exampleIndex of order) {
        const rate = options.learningRate * Math.max(LAST_RATE_SHARE, 1 - step / totalSteps);
        step++;
        const target = targets[exampleIndex] as number;
        trainer.step(
          vectors[exampleIndex] as SparseVector,
          target,
          rate * (labelWeights[target] as number),
          random,
        );
      }
      onEpoch?.(epoch + 1);
    }
    const inputScales = new Float32Array(featureCount);
    const outputScales = new Float32Array(units);
    return new HiddenLayerNetwork(featureCount, units, classCount, {
      inputWeights: quantizeRows(inputWeights, units, inputScales),
      inputScales,
      hiddenBias,
      outputWeights: quantizeRows(outputWeights, classCount, outputScales),
      outputScales,
      outputBias,
    });
  }

  /** The weights themselves, e.g. to copy them out of a worker thread. */
  weights(): NetworkWeights {
    return {
      inputWeights: this.inputWeights,
      inputScales: this.inputScales,
      hiddenBias: this.hiddenBias,
      outputWeights: this.outputWeights,
      outputScales: this.outputScales,
      outputBias: this.outputBias,
    };
  }

  /** Writes this network's softmax over the labels for `vector` into `probabilities`. */
  scoreInto(vector: SparseVector, probabilities: Float64Array): void {
    const units = this.hiddenUnits;
    const classCount = this.classCount;
    const hidden = this.hidden;
    hidden.set(this.hiddenBias);
    const { indices, values } = vector;
    for (let position = 0; position < indices.length; position++) {
      const feature = indices[position] as number;
      const value = (values[position] as number) * (this.inputScales[feature] as number);
      addScaled(hidden, this.inputWeights, feature * units, value);
    }
    probabilities.set(this.outputBias);
    for (let unit = 0; unit < units; unit++) {
      const activation = hidden[unit] as number;
      if (activation <= 0) continue;
      addScaled(
        probabilities,
        this.outputWeights,
        unit * classCount,
        activation * (this.outputScales[unit] as number),
      );
    }
    softmaxInPlace(probabilities);
  }

  /** Bytes `writeTo` writes; every part is a multiple of 4 long. */
  byteLength(): number {
    return HiddenLayerNetwork.byteLengthFor(this.featureCount, this.hiddenUnits, this.classCount);
  }

  /** Writes the network little-endian at `offset`; returns the offset after it. */
  writeTo(bytes: Uint8Array, offset: number): number {
    for (const floats of [this.inputScales, this.hiddenBias, this.outputScales, this.outputBias]) {
      offset = writeLittleEndian(bytes, offset, floats);
    }
    for (const int8 of [this.inputWeights, this.outputWeights]) {
      bytes.set(new Uint8Array(int8.buffer, int8.byteOffset, int8.length), offset);
      offset += align4(int8.length);
    }
    return offset;
  }

  /** Reads a network `writeTo` wrote; the caller has checked the length against `byteLength`. */
  static readFrom(
    bytes: Uint8Array,
    offset: number,
    featureCount: number,
    hiddenUnits: number,
    classCount: number,
  ): { network: HiddenLayerNetwork; end: number } {
    const floats = [featureCount, hiddenUnits, hiddenUnits, classCount].map((length) => {
      const array = new Float32Array(length);
      offset = readLittleEndian(bytes, offset, array);
      return array;
    });
    const int8s = [featureCount * hiddenUnits, hiddenUnits * classCount].map((length) => {
      const array = new Int8Array(bytes.buffer, bytes.byteOffset + offset, length).slice();
      offset += align4(length);
      return array;
    });
    const [inputScales, hiddenBias, outputScales, outputBias] = floats as [
      Float32Array,
      Float32Array,
      Float32Array,
      Float32Array,
    ];
    const [inputWeights, outputWeights] = int8s as [Int8Array, Int8Array];
    const network = new HiddenLayerNetwork(featureCount, hiddenUnits, classCount, {
      inputWeights,
      inputScales,
      hiddenBias,
      outputWeights,
      outputScales,
      outputBias,
    });
    return { network, end: offset };
  }

  /** Bytes a network of this shape takes, for checking a serialized model's length before reading. */
  static byteLengthFor(featureCount: number, hiddenUnits: number, classCount: number): number {
    return (
      align4(featureCount * hiddenUnits) +
      align4(hiddenUnits * classCount) +
      4 * (featureCount + 2 * hiddenUnits + classCount)
    );
  }
}

/** The float32 weights and scratch buffers of one training run; `step` is one SGD step on one example. */
class Trainer {
  private readonly options: HiddenLayerOptions;
  private readonly classCount: number;
  private readonly inputWeights: Float32Array;
  private readonly hiddenBias: Float32Array;
  private readonly outputWeights: Float32Array;
  private readonly outputBias: Float32Array;
  private readonly units: number;
  private readonly hidden: Float64Array;
  private readonly output: Float64Array;
  private readonly kept: Uint8Array = new Uint8Array(256);
  private readonly activeLabels: Int32Array;
  private readonly activeUnits: Int32Array;
  private readonly unitGradients: Float32Array;

  constructor(
    options: HiddenLayerOptions,
    classCount: number,
    weights: {
      inputWeights: Float32Array;
      hiddenBias: Float32Array;
      outputWeights: Float32Array;
      outputBias: Float32Array;
    },
  ) {
    this.options = options;
    this.classCount = classCount;
    this.inputWeights = weights.inputWeights;
    this.hiddenBias = weights.hiddenBias;
    this.outputWeights = weights.outputWeights;
    this.outputBias = weights.outputBias;
    this.units = options.hiddenUnits;
    this.hidden = new Float64Array(this.units);
    this.output = new Float64Array(classCount);
    this.activeLabels = new Int32Array(classCount);
    this.activeUnits = new Int32Array(this.units);
    this.unitGradients = new Float32Array(this.units);
  }

  step(vector: SparseVector, target: number, rate: number, random: () => number): void {
    const { units, classCount, hidden, output, inputWeights, outputWeights } = this;
    const { activeLabels, activeUnits, unitGradients, outputBias, hiddenBias } = this;
    const { dropout, inputDropout, gradientFloor } = this.options;
    const { indices, values } = vector;
    const kept = indices.length <= this.kept.length ? this.kept : new Uint8Array(indices.length);
    const inputScale = 1 / (1 - inputDropout);
    hidden.set(hiddenBias);
    for (let position = 0; position < indices.length; position++) {
      kept[position] = inputDropout > 0 && random() < inputDropout ? 0 : 1;
      if (kept[position] === 0) continue;
      addScaled(
        hidden,
        inputWeights,
        (indices[position] as number) * units,
        (values[position] as number) * inputScale,
      );
    }
    const hiddenScale = 1 / (1 - dropout);
    for (let unit = 0; unit < units; unit++) {
      const activation = hidden[unit] as number;
      hidden[unit] = activation <= 0 || (dropout > 0 && random() < dropout) ? 0 : activation * hiddenScale;
    }
    output.set(outputBias);
    for (let unit = 0; unit < units; unit++) {
      const activation = hidden[unit] as number;
      if (activation !== 0) addScaled(output, outputWeights, unit * classCount, activation);
    }
    softmaxInPlace(output);
    output[target] = (output[target] as number) - 1;
    let activeLabelCount = 0;
    for (let label = 0; label < classCount; label++) {
      const gradient = output[label] as number;
      if (gradient > gradientFloor || gradient < -gradientFloor) activeLabels[activeLabelCount++] = label;
    }
    // Back-propagate to the hidden units that fired, updating the output weights on the way.
    let activeUnitCount = 0;
    for (let unit = 0; unit < units; unit++) {
      const activation = hidden[unit] as number;
      if (activation === 0) continue;
      const row = unit * classCount;
      let gradient = 0;
      for (let slot = 0; slot < activeLabelCount; slot++) {
        const label = activeLabels[slot] as number;
        const outputGradient = output[label] as number;
        gradient += outputGradient * (outputWeights[row + label] as number);
        outputWeights[row + label] =
          (outputWeights[row + label] as number) - rate * activation * outputGradient;
      }
      unitGradients[activeUnitCount] = gradient * hiddenScale;
      activeUnits[activeUnitCount++] = unit;
    }
    for (let slot = 0; slot < activeLabelCount; slot++) {
      const label = activeLabels[slot] as number;
      outputBias[label] = (outputBias[label] as number) - rate * (output[label] as number);
    }
    for (let slot = 0; slot < activeUnitCount; slot++) {
      const unit = activeUnits[slot] as number;
      hiddenBias[unit] = (hiddenBias[unit] as number) - rate * (unitGradients[slot] as number);
    }
    for (let position = 0; position < indices.length; position++) {
      if (kept[position] === 0) continue;
      const row = (indices[position] as number) * units;
      const scaled = rate * (values[position] as number) * inputScale;
      for (let slot = 0; slot < activeUnitCount; slot++) {
        const index = row + (activeUnits[slot] as number);
        inputWeights[index] = (inputWeights[index] as number) - scaled * (unitGradients[slot] as number);
      }
    }
  }
}

/**
 * `target[i] += scale × source[offset + i]` for every `i` of `target`, four at a time: the inner loop
 * of both layers, where training and scoring spend their time (unrolled, about a fifth faster in V8).
 */
function addScaled(
  target: Float64Array,
  source: Float32Array | Int8Array,
  offset: number,
  scale: number,
): void {
  const length = target.length;
  let index = 0;
  for (; index + 3 < length; index += 4) {
    const at = offset + index;
    target[index] = (target[index] as number) + scale * (source[at] as number);
    target[index + 1] = (target[index + 1] as number) + scale * (source[at + 1] as number);
    target[index + 2] = (target[index + 2] as number) + scale * (source[at + 2] as number);
    target[index + 3] = (target[index + 3] as number) + scale * (source[at + 3] as number);
  }
  for (; index < length; index++) {
    target[index] = (target[index] as number) + scale * (source[offset + index] as number);
  }
}

/** Each present label weighs `examples / (labels × its count)`, so every label carries the same total. */
export function balancedLabelWeights(targets: Int32Array, classCount: number): Float64Array {
  const counts = new Float64Array(classCount);
  for (const target of targets) counts[target] = (counts[target] as number) + 1;
  const present = counts.filter((count) => count > 0).length;
  return counts.map((count) => (count === 0 ? 0 : targets.length / (present * count)));
}

export function softmaxInPlace(scores: Float64Array): void {
  let max = -Infinity;
  for (const score of scores) if (score > max) max = score;
  let sum = 0;
  for (let label = 0; label < scores.length; label++) {
    const exponent = Math.exp((scores[label] as number) - max);
    scores[label] = exponent;
    sum += exponent;
  }
  for (let label = 0; label < scores.length; label++) scores[label] = (scores[label] as number) / sum;
}

export function shuffle(order: Int32Array, random: () => number): void {
  for (let index = order.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    const held = order[index] as number;
    order[index] = order[other] as number;
    order[other] = held;
  }
}

export function align4(length: number): number {
  return (length + 3) & ~3;
}
