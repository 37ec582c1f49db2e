import { crc32 } from 'node:zlib';
import { NONE } from '../../core/route-types.js';
import { DEFAULT_FEATURE_OPTIONS, extractFeatures, type FeatureOptions, type RawFeatures } from './features.js';

/**
 * Identifies the feature extraction, training algorithm and binary layout. Part of the router's cache
 * key: bump it whenever any of them changes so stale cached models are retrained, never misread.
 */
export const MODEL_VERSION = 'tfidf-softmax-1';

/** One labelled training text. `label` may be `NONE`: an out-of-scope example the router must refuse. */
export interface TrainingExample {
  text: string;
  label: string;
}

/** A label with its probability; the probabilities of one prediction sum to 1. */
export interface Prediction {
  label: string;
  probability: number;
}

/** Training knobs. Defaults suit both a few skills described in one sentence and 150 routes with 100 examples each. */
export interface TrainOptions {
  /** Seed of the example shuffling; the same examples and seed give the same model. @default 1 */
  seed?: number;
  /** Passes over the examples. @default 12 */
  epochs?: number;
  /** Initial SGD step size, decayed linearly to zero. @default 0.5 */
  learningRate?: number;
  /** L2 penalty on the weights, which keeps probabilities from becoming overconfident. @default 1e-5 */
  l2?: number;
  /** Features seen in fewer training texts than this are dropped. @default 1 */
  minDocumentFrequency?: number;
  features?: Partial<FeatureOptions>;
}

interface ResolvedTrainOptions {
  seed: number;
  epochs: number;
  learningRate: number;
  l2: number;
  minDocumentFrequency: number;
  features: FeatureOptions;
}

/** A sparse, L2-normalised feature vector over vocabulary indices. */
interface SparseVector {
  indices: Int32Array;
  values: Float32Array;
}

/** Magic bytes "SWTC" (Switchboard text classifier) at the start of every serialized model. */
const MAGIC = 0x43545753;
/** Version of the binary layout below; independent of MODEL_VERSION so layout errors read clearly. */
const FORMAT_VERSION = 1;

/** What the JSON header of a serialized model holds. */
interface SerializedHeader {
  modelVersion: string;
  labels: string[];
  featureCount: number;
  features: FeatureOptions;
}

/**
 * A multinomial logistic regression (softmax) over TF-IDF weighted word and character n-grams.
 * Out-of-scope examples train an ordinary `NONE` class; the caller abstains on `NONE`, on low
 * probability or on a small margin between the two best labels.
 */
export class TextClassifier {
  /** Labels the model can predict, `NONE` included when it was trained with out-of-scope examples. */
  readonly labels: readonly string[];
  private readonly featureOptions: FeatureOptions;
  /** Feature hash → row in `weights`. */
  private readonly vocabulary: Map<number, number>;
  private readonly featureHashes: Uint32Array;
  private readonly inverseDocumentFrequency: Float32Array;
  /** Row-major: one row of `labels.length` weights per feature. */
  private readonly weights: Float32Array;
  private readonly bias: Float32Array;

  private constructor(
    labels: readonly string[],
    featureOptions: FeatureOptions,
    featureHashes: Uint32Array,
    inverseDocumentFrequency: Float32Array,
    weights: Float32Array,
    bias: Float32Array,
  ) {
    this.labels = Object.freeze([...labels]);
    this.featureOptions = featureOptions;
    this.featureHashes = featureHashes;
    this.inverseDocumentFrequency = inverseDocumentFrequency;
    this.weights = weights;
    this.bias = bias;
    this.vocabulary = new Map();
    for (let index = 0; index < featureHashes.length; index++) {
      this.vocabulary.set(featureHashes[index] as number, index);
    }
  }

  /** Trains a classifier. Deterministic: the same examples (in the same order) and options give the same model. */
  static train(examples: readonly TrainingExample[], options: TrainOptions = {}): TextClassifier {
    const resolved = resolveOptions(options);
    const labels = [...new Set(examples.map((example) => example.label))].sort();
    if (labels.length === 0) throw new Error('cannot train a text classifier without examples');
    const labelIndex = new Map(labels.map((label, index) => [label, index]));

    const raw = examples.map((example) => extractFeatures(example.text, resolved.features));
    const documentFrequency = new Map<number, number>();
    for (const features of raw) {
      for (const block of [features.words, features.chars]) {
        for (const hash of block.keys()) documentFrequency.set(hash, (documentFrequency.get(hash) ?? 0) + 1);
      }
    }
    const kept = [...documentFrequency.entries()].filter(([, count]) => count >= resolved.minDocumentFrequency);
    const featureHashes = Uint32Array.from(kept.map(([hash]) => hash));
    // Smoothed idf (as in scikit-learn) so a feature present in every text still counts a little.
    const inverseDocumentFrequency = Float32Array.from(
      kept.map(([, count]) => Math.log((1 + examples.length) / (1 + count)) + 1),
    );
    const classCount = labels.length;
    const weights = new Float32Array(featureHashes.length * classCount);
    const bias = new Float32Array(classCount);
    const model = new TextClassifier(
      labels,
      resolved.features,
      featureHashes,
      inverseDocumentFrequency,
      weights,
      bias,
    );
    if (classCount === 1) return model;

    const vectors = raw.map((features) => model.vectorize(features));
    const targets = Int32Array.from(examples.map((example) => labelIndex.get(example.label) as number));
    trainSoftmax(vectors, targets, weights, bias, classCount, resolved);
    return model;
  }

  /** All labels with probabilities summing to 1, best first; `topK` keeps only the first `topK`. */
  predict(text: string, topK?: number): Prediction[] {
    const probabilities = this.probabilities(text);
    const order = [...probabilities.keys()].sort(
      (left, right) => (probabilities[right] as number) - (probabilities[left] as number) || left - right,
    );
    const limit = topK === undefined ? order.length : Math.max(0, Math.min(order.length, Math.floor(topK)));
    return order
      .slice(0, limit)
      .map((index) => ({ label: this.labels[index] as string, probability: probabilities[index] as number }));
  }

  /** Probability of each label, in `labels` order. */
  probabilities(text: string): Float64Array {
    const vector = this.vectorize(extractFeatures(text, this.featureOptions));
    const scores = new Float64Array(this.labels.length);
    scoreInto(vector, this.weights, this.bias, scores);
    softmaxInPlace(scores);
    return scores;
  }

  /** A compact binary form for an on-disk cache; `deserialize` reads it back. */
  serialize(): Uint8Array {
    const header: SerializedHeader = {
      modelVersion: MODEL_VERSION,
      labels: [...this.labels],
      featureCount: this.featureHashes.length,
      features: this.featureOptions,
    };
    const headerBytes = new TextEncoder().encode(JSON.stringify(header));
    const headerEnd = align4(12 + headerBytes.length);
    const arrays = [this.featureHashes, this.inverseDocumentFrequency, this.weights, this.bias];
    const bodyLength = arrays.reduce((total, array) => total + array.byteLength, 0);
    const bytes = new Uint8Array(headerEnd + bodyLength + 4);
    const view = new DataView(bytes.buffer);
    view.setUint32(0, MAGIC, true);
    view.setUint32(4, FORMAT_VERSION, true);
    view.setUint32(8, headerBytes.length, true);
    bytes.set(headerBytes, 12);
    let offset = headerEnd;
    for (const array of arrays) {
      writeLittleEndian32(view, offset, array);
      offset += array.byteLength;
    }
    view.setUint32(offset, crc32(bytes.subarray(0, offset)), true);
    return bytes;
  }

  /** Reads a model written by `serialize`; throws a descriptive Error on corrupt or outdated input. */
  static deserialize(bytes: Uint8Array): TextClassifier {
    const fail = (why: string): never => {
      throw new Error(`cannot read cached text classifier: ${why}`);
    };
    if (bytes.length < 16) fail('too short');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (view.getUint32(0, true) !== MAGIC) fail('not a Switchboard text classifier');
    const format = view.getUint32(4, true);
    if (format !== FORMAT_VERSION) fail(`binary format ${format}, expected ${FORMAT_VERSION}`);
    const checksumOffset = bytes.length - 4;
    if (view.getUint32(checksumOffset, true) !== crc32(bytes.subarray(0, checksumOffset))) {
      fail('checksum mismatch (the file is corrupt or truncated)');
    }
    const headerLength = view.getUint32(8, true);
    if (12 + headerLength > checksumOffset) fail('header length out of range');
    let header: SerializedHeader;
    try {
      header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength))) as SerializedHeader;
    } catch {
      return fail('header is not valid JSON');
    }
    if (header.modelVersion !== MODEL_VERSION) {
      fail(`model version ${String(header.modelVersion)}, expected ${MODEL_VERSION}`);
    }
    if (!Array.isArray(header.labels) || header.labels.length === 0) fail('header has no labels');
    const featureCount = header.featureCount;
    const classCount = header.labels.length;
    if (!Number.isInteger(featureCount) || featureCount < 0) fail('bad feature count');
    let offset = align4(12 + headerLength);
    const expectedEnd = offset + 4 * (featureCount * 2 + featureCount * classCount + classCount);
    if (expectedEnd !== checksumOffset) fail('body length does not match the header');
    const featureHashes = new Uint32Array(featureCount);
    offset = readLittleEndian32(view, offset, featureHashes);
    const inverseDocumentFrequency = new Float32Array(featureCount);
    offset = readLittleEndian32(view, offset, inverseDocumentFrequency);
    const weights = new Float32Array(featureCount * classCount);
    offset = readLittleEndian32(view, offset, weights);
    const bias = new Float32Array(classCount);
    readLittleEndian32(view, offset, bias);
    return new TextClassifier(
      header.labels,
      { ...DEFAULT_FEATURE_OPTIONS, ...header.features },
      featureHashes,
      inverseDocumentFrequency,
      weights,
      bias,
    );
  }

  /** TF-IDF with sublinear tf; each block L2-normalised and weighted, then the whole vector normalised. */
  private vectorize(features: RawFeatures): SparseVector {
    const indices: number[] = [];
    const values: number[] = [];
    const blocks: [Map<number, number>, number][] = [
      [features.words, this.featureOptions.wordWeight],
      [features.chars, this.featureOptions.charWeight],
    ];
    let totalSquared = 0;
    for (const [counts, blockWeight] of blocks) {
      const start = values.length;
      let squared = 0;
      for (const [hash, count] of counts) {
        const index = this.vocabulary.get(hash);
        if (index === undefined) continue;
        const value = (1 + Math.log(count)) * (this.inverseDocumentFrequency[index] as number);
        indices.push(index);
        values.push(value);
        squared += value * value;
      }
      if (squared === 0) continue;
      const scale = blockWeight / Math.sqrt(squared);
      for (let position = start; position < values.length; position++) {
        values[position] = (values[position] as number) * scale;
      }
      totalSquared += blockWeight * blockWeight;
    }
    if (totalSquared > 0) {
      const scale = 1 / Math.sqrt(totalSquared);
      for (let position = 0; position < values.length; position++) {
        values[position] = (values[position] as number) * scale;
      }
    }
    return { indices: Int32Array.from(indices), values: Float32Array.from(values) };
  }
}

function resolveOptions(options: TrainOptions): ResolvedTrainOptions {
  return {
    seed: options.seed ?? 1,
    epochs: options.epochs ?? 12,
    learningRate: options.learningRate ?? 0.5,
    l2: options.l2 ?? 1e-5,
    minDocumentFrequency: options.minDocumentFrequency ?? 1,
    features: { ...DEFAULT_FEATURE_OPTIONS, ...options.features },
  };
}

function scoreInto(vector: SparseVector, weights: Float32Array, bias: Float32Array, scores: Float64Array): void {
  const classCount = scores.length;
  for (let label = 0; label < classCount; label++) scores[label] = bias[label] as number;
  const { indices, values } = vector;
  for (let position = 0; position < indices.length; position++) {
    const row = (indices[position] as number) * classCount;
    const value = values[position] as number;
    for (let label = 0; label < classCount; label++) {
      scores[label] = (scores[label] as number) + value * (weights[row + label] as number);
    }
  }
}

function softmaxInPlace(scores: Float64Array): void {
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

/**
 * Plain SGD on the softmax cross-entropy with a linearly decaying step. L2 decay is applied only to
 * the rows an example touches (a common sparse approximation) so each step stays O(nonzeros × labels).
 */
function trainSoftmax(
  vectors: readonly SparseVector[],
  targets: Int32Array,
  weights: Float32Array,
  bias: Float32Array,
  classCount: number,
  options: ResolvedTrainOptions,
): void {
  const random = mulberry32(options.seed);
  const order = Int32Array.from(vectors.keys());
  const scores = new Float64Array(classCount);
  const totalSteps = Math.max(1, options.epochs * vectors.length);
  let step = 0;
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    shuffle(order, random);
    for (const exampleIndex of order) {
      const rate = options.learningRate * Math.max(1e-4, 1 - step / totalSteps);
      step++;
      const vector = vectors[exampleIndex] as SparseVector;
      scoreInto(vector, weights, bias, scores);
      softmaxInPlace(scores);
      const target = targets[exampleIndex] as number;
      scores[target] = (scores[target] as number) - 1;
      for (let label = 0; label < classCount; label++) {
        bias[label] = (bias[label] as number) - rate * (scores[label] as number);
      }
      const decay = 1 - rate * options.l2;
      const { indices, values } = vector;
      for (let position = 0; position < indices.length; position++) {
        const row = (indices[position] as number) * classCount;
        const step = rate * (values[position] as number);
        for (let label = 0; label < classCount; label++) {
          weights[row + label] = (weights[row + label] as number) * decay - step * (scores[label] as number);
        }
      }
    }
  }
}

/** Small, fast, seedable PRNG; Math.random cannot be seeded and would make training nondeterministic. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(order: Int32Array, random: () => number): void {
  for (let index = order.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    const held = order[index] as number;
    order[index] = order[other] as number;
    order[other] = held;
  }
}

function align4(length: number): number {
  return (length + 3) & ~3;
}

/** Little-endian on every platform, so a cache written on one machine reads on another. */
function writeLittleEndian32(view: DataView, offset: number, array: Uint32Array | Float32Array): void {
  const isFloat = array instanceof Float32Array;
  for (let index = 0; index < array.length; index++) {
    if (isFloat) view.setFloat32(offset + index * 4, array[index] as number, true);
    else view.setUint32(offset + index * 4, array[index] as number, true);
  }
}

function readLittleEndian32(view: DataView, offset: number, into: Uint32Array | Float32Array): number {
  const isFloat = into instanceof Float32Array;
  for (let index = 0; index < into.length; index++) {
    into[index] = isFloat ? view.getFloat32(offset + index * 4, true) : view.getUint32(offset + index * 4, true);
  }
  return offset + into.length * 4;
}

/** Re-exported so callers can test a prediction against the out-of-scope label without a second import. */
export { NONE };
