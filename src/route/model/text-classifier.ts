import { crc32 } from 'node:zlib';
import { NONE } from '../../core/route-types.js';
import {
  DEFAULT_FEATURE_OPTIONS,
  extractFeatures,
  type FeatureOptions,
  type RawFeatures,
} from './features.js';
import { seededRandom } from '../../core/seeded-random.js';
import {
  align4,
  balancedLabelWeights,
  HiddenLayerNetwork,
  shuffle,
  softmaxInPlace,
  type SparseVector,
} from './hidden-layer.js';
import { quantizeRows } from './int8-rows.js';
import { readLittleEndian, writeLittleEndian } from './little-endian.js';
import { packTrainingSet, trainNetworks } from './network-training.js';

/**
 * Identifies the feature extraction and training algorithm. Part of the router's cache key: bump it
 * whenever either changes so stale cached models are retrained, never misread. A change of the binary
 * layout alone bumps `FORMAT_VERSION` instead: the old file, under the same name, then reads as a cache
 * miss and is overwritten, and decisions cached for the same model stay valid.
 */
export const MODEL_VERSION = 'tfidf-4';

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
  /** Passes over the examples. @default 7, more for small sets so training takes at least 2,000 steps */
  epochs?: number;
  /** Initial SGD step size, decayed linearly to zero. @default 4 */
  learningRate?: number;
  /** L2 penalty on the weights, applied once per epoch; it made the few-shot dev sets worse. @default 0 */
  l2?: number;
  /** Features seen in fewer training texts than this are dropped. @default 1 */
  minDocumentFrequency?: number;
  /**
   * Feature extraction. `separateFunctionWords` defaults to true when the labels average fewer than
   * 20 examples each (skills described in a sentence) and false for larger sets.
   */
  features?: Partial<FeatureOptions>;
  /**
   * Train a word model and a character model apart and average their probabilities, instead of one
   * model over both blocks. Two half-models disagree on different requests, so their average is
   * right more often (CLINC150: +0.3 to 0.4 points in-scope accuracy) and less confident when they
   * disagree. @default true when the labels average at least 20 examples each, false below
   */
  ensemble?: boolean;
  /**
   * `network`: averaged feed-forward networks with one hidden layer (see hidden-layer.ts); `linear`:
   * the softmax regression. @default `network` when the labels average at least 20 examples each,
   * `linear` below (a few phrases per skill are too few for a hidden layer to learn from)
   */
  model?: 'linear' | 'network';
  /** How many networks, each from its own seed, are averaged. @default 2 */
  networks?: number;
  /** Hidden units per network. @default 128 */
  hiddenUnits?: number;
}

/**
 * Seven passes suffice with thousands of examples; a few dozen skill phrases need many more passes
 * to converge, so small training sets get enough epochs to take at least MIN_STEPS steps.
 */
const MIN_EPOCHS = 7;
const MAX_EPOCHS = 200;
const MIN_STEPS = 2000;
/**
 * A few-shot model (skills described in a sentence or two) trusts its probabilities fully only when
 * some training phrase matches the request with at least this cosine, and blends them towards a
 * flat prediction below it. A softmax over three skills gives a request with one accidental n-gram
 * overlap ("movie" shares "mov" with "improve") 0.4 against 0.3; on the few-shot dev sets and
 * unrelated probes, in-scope requests mostly match a phrase at 0.2 or more and unrelated ones at
 * under 0.07, and 0.1 refused most unrelated requests without losing an in-scope one.
 */
const PHRASE_MATCH_FULL_TRUST = 0.1;
/** Below this many examples per label, stop words are kept apart from content words (see FeatureOptions). */
const FEW_SHOT_EXAMPLES_PER_LABEL = 20;
/**
 * Network settings chosen on CLINC150's validation split (see bench/clinc150.ts): two networks of
 * 128 units, ten epochs, 40 % of input features and 20 % of hidden units dropped per step, character
 * n-grams from length 2. Two networks averaged gained 0.3-0.5 points over one; a third 0.1-0.2 more
 * for half as much training time again.
 */
const NETWORK_DEFAULTS = {
  networks: 2,
  hiddenUnits: 128,
  epochs: 10,
  learningRate: 0.2,
  dropout: 0.2,
  inputDropout: 0.4,
  minCharGram: 2,
} as const;

interface ResolvedTrainOptions {
  seed: number;
  epochs: number;
  learningRate: number;
  l2: number;
  minDocumentFrequency: number;
  features: FeatureOptions;
  ensemble: boolean;
  matchPhrases: boolean;
  gradientFloor: number;
  model: 'linear' | 'network';
  networks: number;
  hiddenUnits: number;
}

/** Raw counts of one feature block with the block's weight. */
type FeatureBlock = [Map<number, number>, number];

/** Magic bytes "SWTC" (Switchboard text classifier) at the start of every serialized model. */
const MAGIC = 0x43545753;
/**
 * Version of the binary layout below; independent of MODEL_VERSION so layout errors read clearly.
 * 5: the phrase index (postings and norms) is stored, so loading a model no longer re-vectorises its
 * training phrases.
 */
const FORMAT_VERSION = 5;

/** What the JSON header of a serialized model holds. */
interface SerializedHeader {
  modelVersion: string;
  labels: string[];
  featureCount: number;
  features: FeatureOptions;
  ensemble: boolean;
  phrases?: string[];
  model: 'linear' | 'network';
  hiddenUnits: number;
  networkCount: number;
  /** Entries of the stored phrase index (0 without phrases). */
  phrasePostings: number;
}

/**
 * A few-shot model's training phrases as an inverted index for the best-match cosine at prediction
 * time, in compressed-row form: the postings of feature row `r` are entries `starts[r]` up to
 * `starts[r + 1]` of `phraseNumbers` and `values`. A request then costs its own features' postings
 * rather than a pass over every phrase, which matters for a folder of a hundred skills. Computed once
 * when training and stored with the model: re-vectorising every phrase took most of loading a cached one.
 */
interface PhraseIndex {
  /** featureCount + 1 offsets; empty when the model has no phrases. */
  starts: Uint32Array;
  phraseNumbers: Uint32Array;
  values: Float32Array;
  /** L2 norm of each phrase's vector (below 1 when a block is missing from it). */
  norms: Float64Array;
}

/**
 * A classifier over TF-IDF weighted word and character n-grams. With many examples per label it
 * averages feed-forward networks with one hidden layer (`HiddenLayerNetwork`); with a few phrases per
 * label (skills described in a sentence) it is a multinomial logistic regression (softmax) trusted in
 * proportion to how well some training phrase matches. Weights are int8 with a per-row scale.
 * Out-of-scope examples train an ordinary `NONE` class; the caller abstains on `NONE`, on low
 * probability or on a small margin between the two best labels.
 */
export class TextClassifier {
  /** Labels the model can predict, `NONE` included when it was trained with out-of-scope examples. */
  readonly labels: readonly string[];
  private readonly featureOptions: FeatureOptions;
  /**
   * Whether the word blocks and the character block form two separate models (see
   * `TrainOptions.ensemble`). Their features are disjoint, so both live in the one `weightSteps` array.
   */
  private readonly ensemble: boolean;
  /** Feature hash → row in `weightSteps`. */
  private readonly vocabulary: Map<number, number>;
  private readonly featureHashes: Uint32Array;
  private readonly inverseDocumentFrequency: Float32Array;
  /**
   * The linear model's weights as int8 steps, row-major: one row of `labels.length` per feature. There
   * is no bias term: a request with no known feature then scores every label alike (a flat, refusable
   * prediction) instead of going to whichever label had the most training phrases.
   */
  private readonly weightSteps: Int8Array;
  /**
   * Per-feature scale of the int8 weights: the weight of row `f` is `step × rowScales[f]`, rounded to
   * float32 where it is used. Weights are quantised when training ends, not when saving, so a trained
   * model and the same model read back from disk predict bit for bit alike; kept as int8, a model read
   * from disk is used as the file holds it, with no pass over every weight first.
   */
  private readonly rowScales: Float32Array;
  /**
   * Unseen features still count towards a text's norm (at the idf of a feature seen nowhere), so a
   * request made mostly of words the skills never mention gets a short vector and a flat, low-confidence
   * prediction instead of having one accidental overlap normalised up to full strength.
   */
  private readonly unseenFeatureWeight: number;
  /**
   * Training texts of a few-shot model (see `PHRASE_MATCH_FULL_TRUST`), kept for serialisation;
   * empty for a model trained on many examples per label.
   */
  private readonly phrases: readonly string[];
  /** `phrases` as an inverted index (see `PhraseIndex`). */
  private readonly phraseIndex: PhraseIndex;
  /** The averaged networks of a `network` model; empty for a linear one (whose `weightSteps` score instead). */
  private readonly networks: readonly HiddenLayerNetwork[];

  private constructor(
    labels: readonly string[],
    featureOptions: FeatureOptions,
    ensemble: boolean,
    featureHashes: Uint32Array,
    inverseDocumentFrequency: Float32Array,
    weightSteps: Int8Array,
    rowScales: Float32Array,
    phrases: readonly string[],
    networks: readonly HiddenLayerNetwork[] = [],
    phraseIndex?: PhraseIndex,
  ) {
    this.networks = networks;
    this.labels = Object.freeze([...labels]);
    this.featureOptions = featureOptions;
    this.ensemble = ensemble;
    this.featureHashes = featureHashes;
    this.inverseDocumentFrequency = inverseDocumentFrequency;
    this.weightSteps = weightSteps;
    this.rowScales = rowScales;
    let maxIdf = 1;
    for (let index = 0; index < inverseDocumentFrequency.length; index++) {
      maxIdf = Math.max(maxIdf, inverseDocumentFrequency[index] as number);
    }
    this.unseenFeatureWeight = maxIdf;
    this.vocabulary = new Map();
    for (let index = 0; index < featureHashes.length; index++) {
      this.vocabulary.set(featureHashes[index] as number, index);
    }
    this.phrases = Object.freeze([...phrases]);
    this.phraseIndex =
      phraseIndex ??
      buildPhraseIndex(
        this.phrases.map((phrase) => this.vectorizeAll(extractFeatures(phrase, this.featureOptions))),
        featureHashes.length,
      );
  }

  /** Trains a classifier. Deterministic: the same examples (in the same order) and options give the same model. */
  /**
   * Trains a model. `onProgress` hears of each finished pass over the examples (of every ensemble
   * member), so a terminal can show how far a long training run is.
   */
  static train(
    examples: readonly TrainingExample[],
    options: TrainOptions = {},
    onProgress?: (done: number, total: number) => void,
  ): TextClassifier {
    const labels = [...new Set(examples.map((example) => example.label))].sort();
    if (labels.length === 0) throw new Error('cannot train a text classifier without examples');
    const resolved = resolveOptions(options, examples.length, labels.length);
    const labelIndex = new Map(labels.map((label, index) => [label, index]));

    // Features are extracted twice (counting, then vectorising) rather than kept: 15,000 texts' Maps
    // would cost over 100 MB of resident memory for a saving of a fraction of a second.
    const documentFrequency = new Map<number, number>();
    for (const example of examples) {
      const features = extractFeatures(example.text, resolved.features);
      for (const block of [features.words, features.chars, features.functionWords]) {
        for (const hash of block.keys()) documentFrequency.set(hash, (documentFrequency.get(hash) ?? 0) + 1);
      }
    }
    const kept = [...documentFrequency.entries()].filter(
      ([, count]) => count >= resolved.minDocumentFrequency,
    );
    const featureHashes = Uint32Array.from(kept.map(([hash]) => hash));
    // Smoothed idf (as in scikit-learn) so a feature present in every text still counts a little.
    const inverseDocumentFrequency = Float32Array.from(
      kept.map(([, count]) => Math.log((1 + examples.length) / (1 + count)) + 1),
    );
    const classCount = labels.length;
    const linear = resolved.model === 'linear';
    const weights = new Float32Array(linear ? featureHashes.length * classCount : 0);
    const rowScales = new Float32Array(linear ? featureHashes.length : 0);
    const model = new TextClassifier(
      labels,
      resolved.features,
      resolved.ensemble,
      featureHashes,
      inverseDocumentFrequency,
      new Int8Array(weights.length),
      rowScales,
      resolved.matchPhrases ? [...new Set(examples.map((example) => example.text))] : [],
    );
    if (classCount === 1) return model;
    if (!linear) return model.withNetworks(examples, labelIndex, resolved, onProgress);

    const vectors = examples.map((example) =>
      model.vectorize(extractFeatures(example.text, resolved.features)),
    );
    const targets = Int32Array.from(examples.map((example) => labelIndex.get(example.label) as number));
    const memberCount = vectors[0]?.length ?? 0;
    const passes = memberCount * resolved.epochs;
    for (let member = 0; member < memberCount; member++) {
      const memberVectors = vectors.map((memberVector) => memberVector[member] as SparseVector);
      trainSoftmax(memberVectors, targets, weights, classCount, resolved, (epoch) =>
        onProgress?.(member * resolved.epochs + epoch, passes),
      );
    }
    return new TextClassifier(
      labels,
      resolved.features,
      resolved.ensemble,
      featureHashes,
      inverseDocumentFrequency,
      quantizeRows(weights, classCount, rowScales),
      rowScales,
      model.phrases,
      [],
      model.phraseIndex,
    );
  }

  /** Trains `resolved.networks` networks on this model's vocabulary and returns the model holding them. */
  private withNetworks(
    examples: readonly TrainingExample[],
    labelIndex: ReadonlyMap<string, number>,
    resolved: ResolvedTrainOptions,
    onProgress?: (done: number, total: number) => void,
  ): TextClassifier {
    const set = packTrainingSet(
      examples.map((example) => this.vectorizeAll(extractFeatures(example.text, resolved.features))),
      Int32Array.from(examples.map((example) => labelIndex.get(example.label) as number)),
    );
    const optionsList = Array.from({ length: resolved.networks }, (_, member) => ({
      hiddenUnits: resolved.hiddenUnits,
      epochs: resolved.epochs,
      learningRate: resolved.learningRate,
      dropout: NETWORK_DEFAULTS.dropout,
      inputDropout: NETWORK_DEFAULTS.inputDropout,
      seed: resolved.seed + member,
      gradientFloor: resolved.gradientFloor,
    }));
    const networks = trainNetworks(
      set,
      this.featureHashes.length,
      this.labels.length,
      optionsList,
      onProgress,
    );
    return new TextClassifier(
      this.labels,
      this.featureOptions,
      false,
      this.featureHashes,
      this.inverseDocumentFrequency,
      this.weightSteps,
      this.rowScales,
      [],
      networks,
    );
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
    const features = extractFeatures(text, this.featureOptions);
    if (this.networks.length > 0) return this.networkProbabilities(this.vectorizeAll(features));
    const members = this.vectorize(features);
    const probabilities = new Float64Array(this.labels.length);
    const scores = members.length === 1 ? probabilities : new Float64Array(this.labels.length);
    for (const vector of members) {
      scoreStepsInto(vector, this.weightSteps, this.rowScales, scores);
      softmaxInPlace(scores);
      if (scores === probabilities) break;
      for (let label = 0; label < scores.length; label++) {
        probabilities[label] = (probabilities[label] as number) + (scores[label] as number) / members.length;
      }
    }
    if (this.phrases.length > 0) {
      // Trust the model in proportion to how much of the request some training phrase accounts for;
      // the rest of the probability goes to a flat prediction that the abstain rule refuses.
      const whole = this.ensemble ? this.vectorizeAll(features) : (members[0] as SparseVector);
      const trust = Math.min(1, this.bestPhraseMatch(whole) / PHRASE_MATCH_FULL_TRUST);
      const flat = (1 - trust) / probabilities.length;
      for (let label = 0; label < probabilities.length; label++) {
        probabilities[label] = trust * (probabilities[label] as number) + flat;
      }
    }
    return probabilities;
  }

  /** The networks' probabilities averaged. */
  private networkProbabilities(vector: SparseVector): Float64Array {
    const probabilities = new Float64Array(this.labels.length);
    if (this.networks.length === 1) {
      (this.networks[0] as HiddenLayerNetwork).scoreInto(vector, probabilities);
      return probabilities;
    }
    const scores = new Float64Array(this.labels.length);
    for (const network of this.networks) {
      network.scoreInto(vector, scores);
      for (let label = 0; label < scores.length; label++) {
        probabilities[label] =
          (probabilities[label] as number) + (scores[label] as number) / this.networks.length;
      }
    }
    return probabilities;
  }

  /** A compact binary form for an on-disk cache; `deserialize` reads it back. */
  serialize(): Uint8Array {
    const { starts, phraseNumbers, values, norms } = this.phraseIndex;
    const header: SerializedHeader = {
      modelVersion: MODEL_VERSION,
      labels: [...this.labels],
      featureCount: this.featureHashes.length,
      features: this.featureOptions,
      ensemble: this.ensemble,
      phrases: [...this.phrases],
      model: this.networks.length > 0 ? 'network' : 'linear',
      hiddenUnits: this.networks[0]?.hiddenUnits ?? 0,
      networkCount: this.networks.length,
      phrasePostings: phraseNumbers.length,
    };
    const headerBytes = new TextEncoder().encode(JSON.stringify(header));
    const headerEnd = align4(12 + headerBytes.length);
    const arrays = [this.featureHashes, this.inverseDocumentFrequency, this.rowScales];
    const phraseArrays = [starts, phraseNumbers, values, norms];
    const byteLength = (total: number, array: { byteLength: number }) => total + array.byteLength;
    const networksLength = this.networks.reduce((total, network) => total + network.byteLength(), 0);
    const bytes = new Uint8Array(
      headerEnd +
        arrays.reduce(byteLength, 0) +
        align4(this.weightSteps.length) +
        networksLength +
        phraseArrays.reduce(byteLength, 0) +
        4,
    );
    const view = new DataView(bytes.buffer);
    view.setUint32(0, MAGIC, true);
    view.setUint32(4, FORMAT_VERSION, true);
    view.setUint32(8, headerBytes.length, true);
    bytes.set(headerBytes, 12);
    let offset = headerEnd;
    for (const array of arrays) offset = writeLittleEndian(bytes, offset, array);
    bytes.set(
      new Uint8Array(this.weightSteps.buffer, this.weightSteps.byteOffset, this.weightSteps.length),
      offset,
    );
    offset += align4(this.weightSteps.length);
    for (const network of this.networks) offset = network.writeTo(bytes, offset);
    for (const array of phraseArrays) offset = writeLittleEndian(bytes, offset, array);
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
      header = JSON.parse(
        new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)),
      ) as SerializedHeader;
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
    const network = header.model === 'network';
    const { hiddenUnits, networkCount } = network ? header : { hiddenUnits: 0, networkCount: 0 };
    if (network && !(Number.isInteger(hiddenUnits) && hiddenUnits > 0 && Number.isInteger(networkCount))) {
      fail('bad network shape');
    }
    const phrases = Array.isArray(header.phrases)
      ? header.phrases.filter((phrase) => typeof phrase === 'string')
      : [];
    const postingCount = header.phrasePostings;
    if (!Number.isInteger(postingCount) || postingCount < 0 || (phrases.length === 0 && postingCount > 0)) {
      fail('bad phrase index size');
    }
    const linearRows = network ? 0 : featureCount;
    const startCount = phrases.length === 0 ? 0 : featureCount + 1;
    let offset = align4(12 + headerLength);
    const expectedEnd =
      offset +
      4 * featureCount * 2 +
      4 * linearRows +
      align4(linearRows * classCount) +
      networkCount * HiddenLayerNetwork.byteLengthFor(featureCount, hiddenUnits, classCount) +
      4 * startCount +
      8 * postingCount +
      8 * phrases.length;
    if (expectedEnd !== checksumOffset) fail('body length does not match the header');
    const featureHashes = new Uint32Array(featureCount);
    offset = readLittleEndian(bytes, offset, featureHashes);
    const inverseDocumentFrequency = new Float32Array(featureCount);
    offset = readLittleEndian(bytes, offset, inverseDocumentFrequency);
    const rowScales = new Float32Array(linearRows);
    offset = readLittleEndian(bytes, offset, rowScales);
    const weightSteps = new Int8Array(
      bytes.buffer,
      bytes.byteOffset + offset,
      linearRows * classCount,
    ).slice();
    offset += align4(weightSteps.length);
    const networks: HiddenLayerNetwork[] = [];
    for (let member = 0; member < networkCount; member++) {
      const read = HiddenLayerNetwork.readFrom(bytes, offset, featureCount, hiddenUnits, classCount);
      networks.push(read.network);
      offset = read.end;
    }
    const phraseIndex: PhraseIndex = {
      starts: new Uint32Array(startCount),
      phraseNumbers: new Uint32Array(postingCount),
      values: new Float32Array(postingCount),
      norms: new Float64Array(phrases.length),
    };
    for (const array of [
      phraseIndex.starts,
      phraseIndex.phraseNumbers,
      phraseIndex.values,
      phraseIndex.norms,
    ])
      offset = readLittleEndian(bytes, offset, array);
    if (!isWellFormed(phraseIndex)) fail('phrase index out of range');
    return new TextClassifier(
      header.labels,
      { ...DEFAULT_FEATURE_OPTIONS, ...header.features },
      header.ensemble === true,
      featureHashes,
      inverseDocumentFrequency,
      weightSteps,
      rowScales,
      phrases,
      networks,
      phraseIndex,
    );
  }

  /** One vector per ensemble member (the word blocks, then the character block), or one over all blocks. */
  private vectorize(features: RawFeatures): SparseVector[] {
    if (!this.ensemble) return [this.vectorizeAll(features)];
    const { wordWeight, charWeight, functionWordWeight, separateFunctionWords } = this.featureOptions;
    const wordBlocks: FeatureBlock[] = [[features.words, wordWeight]];
    if (separateFunctionWords) wordBlocks.push([features.functionWords, functionWordWeight]);
    return [this.vectorizeBlocks(wordBlocks), this.vectorizeBlocks([[features.chars, charWeight]])];
  }

  /** One vector over every block, whether or not the model is an ensemble. */
  private vectorizeAll(features: RawFeatures): SparseVector {
    const { wordWeight, charWeight, functionWordWeight, separateFunctionWords } = this.featureOptions;
    const blocks: FeatureBlock[] = [
      [features.words, wordWeight],
      [features.chars, charWeight],
    ];
    if (separateFunctionWords) blocks.push([features.functionWords, functionWordWeight]);
    return this.vectorizeBlocks(blocks);
  }

  /**
   * The largest cosine between the request and a training phrase. The request's vector is not
   * rescaled: its unseen features count towards its norm, so a request the phrases explain only in
   * part matches weakly.
   */
  private bestPhraseMatch(request: SparseVector): number {
    const { starts, phraseNumbers, values, norms } = this.phraseIndex;
    const dots = new Float64Array(this.phrases.length);
    for (let position = 0; position < request.indices.length; position++) {
      const row = request.indices[position] as number;
      const end = starts[row + 1] as number;
      const value = request.values[position] as number;
      for (let entry = starts[row] as number; entry < end; entry++) {
        const phraseNumber = phraseNumbers[entry] as number;
        dots[phraseNumber] = (dots[phraseNumber] as number) + value * (values[entry] as number);
      }
    }
    let best = 0;
    for (let phraseNumber = 0; phraseNumber < dots.length; phraseNumber++) {
      const norm = norms[phraseNumber] as number;
      if (norm > 0) best = Math.max(best, (dots[phraseNumber] as number) / norm);
    }
    return best;
  }

  /** TF-IDF with sublinear tf; each block L2-normalised and weighted, then the whole vector normalised. */
  private vectorizeBlocks(blocks: readonly FeatureBlock[]): SparseVector {
    const indices: number[] = [];
    const values: number[] = [];
    let totalSquared = 0;
    for (const [counts, blockWeight] of blocks) {
      const start = values.length;
      let squared = 0;
      for (const [hash, count] of counts) {
        const index = this.vocabulary.get(hash);
        const idf =
          index === undefined ? this.unseenFeatureWeight : (this.inverseDocumentFrequency[index] as number);
        const value = (1 + Math.log(count)) * idf;
        squared += value * value;
        if (index === undefined) continue;
        indices.push(index);
        values.push(value);
      }
      // Every block counts towards the total, present or not, so a request of stop words alone
      // stays a short vector (weak evidence) instead of being normalised up to full strength.
      totalSquared += blockWeight * blockWeight;
      if (squared === 0) continue;
      const scale = blockWeight / Math.sqrt(squared);
      for (let position = start; position < values.length; position++) {
        values[position] = (values[position] as number) * scale;
      }
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

function resolveOptions(
  options: TrainOptions,
  exampleCount: number,
  labelCount: number,
): ResolvedTrainOptions {
  const fewShot = exampleCount / labelCount < FEW_SHOT_EXAMPLES_PER_LABEL;
  const separateFunctionWords = options.features?.separateFunctionWords ?? fewShot;
  const model = options.model ?? (fewShot ? 'linear' : 'network');
  const linearEpochs = Math.min(MAX_EPOCHS, Math.max(MIN_EPOCHS, Math.ceil(MIN_STEPS / exampleCount)));
  const network = model === 'network';
  return {
    seed: options.seed ?? 1,
    epochs: options.epochs ?? (network ? NETWORK_DEFAULTS.epochs : linearEpochs),
    learningRate: options.learningRate ?? (network ? NETWORK_DEFAULTS.learningRate : 4),
    l2: options.l2 ?? 0,
    minDocumentFrequency: options.minDocumentFrequency ?? 1,
    features: {
      ...DEFAULT_FEATURE_OPTIONS,
      ...(network ? { minCharGram: NETWORK_DEFAULTS.minCharGram } : {}),
      ...options.features,
      separateFunctionWords,
    },
    ensemble: !network && (options.ensemble ?? !fewShot),
    matchPhrases: fewShot,
    gradientFloor: 1e-4,
    model,
    networks: Math.max(1, Math.floor(options.networks ?? NETWORK_DEFAULTS.networks)),
    hiddenUnits: Math.max(1, Math.floor(options.hiddenUnits ?? NETWORK_DEFAULTS.hiddenUnits)),
  };
}

function scoreInto(vector: SparseVector, weights: Float32Array, scores: Float64Array): void {
  const classCount = scores.length;
  scores.fill(0);
  const { indices, values } = vector;
  for (let position = 0; position < indices.length; position++) {
    const row = (indices[position] as number) * classCount;
    const value = values[position] as number;
    for (let label = 0; label < classCount; label++) {
      scores[label] = (scores[label] as number) + value * (weights[row + label] as number);
    }
  }
}

/** `scoreInto` over int8 steps: each weight is `step × scale` rounded to float32, as it was trained. */
function scoreStepsInto(
  vector: SparseVector,
  steps: Int8Array,
  rowScales: Float32Array,
  scores: Float64Array,
): void {
  const classCount = scores.length;
  scores.fill(0);
  const { indices, values } = vector;
  for (let position = 0; position < indices.length; position++) {
    const feature = indices[position] as number;
    const row = feature * classCount;
    const scale = rowScales[feature] as number;
    const value = values[position] as number;
    for (let label = 0; label < classCount; label++) {
      const weight = Math.fround((steps[row + label] as number) * scale);
      scores[label] = (scores[label] as number) + value * weight;
    }
  }
}

/**
 * Plain SGD on the class-balanced softmax cross-entropy with a linearly decaying step; optional L2
 * decay once per epoch.
 */
function trainSoftmax(
  vectors: readonly SparseVector[],
  targets: Int32Array,
  weights: Float32Array,
  classCount: number,
  options: ResolvedTrainOptions,
  onEpoch?: (finished: number) => void,
): void {
  const random = seededRandom(options.seed);
  const order = Int32Array.from(vectors.keys());
  const scores = new Float64Array(classCount);
  const active = new Int32Array(classCount);
  const totalSteps = Math.max(1, options.epochs * vectors.length);
  // Each label carries the same total weight: a skill whose description splits into many phrases
  // must not become the default answer just by having more of them.
  const labelWeights = balancedLabelWeights(targets, classCount);
  let step = 0;
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    shuffle(order, random);
    for (const exampleIndex of order) {
      const rate = options.learningRate * Math.max(1e-4, 1 - step / totalSteps);
      step++;
      const vector = vectors[exampleIndex] as SparseVector;
      scoreInto(vector, weights, scores);
      softmaxInPlace(scores);
      const target = targets[exampleIndex] as number;
      scores[target] = (scores[target] as number) - 1;
      const exampleWeight = labelWeights[target] as number;
      let activeCount = 0;
      for (let label = 0; label < classCount; label++) {
        const gradient = (scores[label] as number) * exampleWeight;
        scores[label] = gradient;
        // Labels with a negligible gradient are skipped: after the first epoch that is most of them.
        if (gradient > options.gradientFloor || gradient < -options.gradientFloor) {
          active[activeCount++] = label;
        }
      }
      const { indices, values } = vector;
      for (let position = 0; position < indices.length; position++) {
        const row = (indices[position] as number) * classCount;
        const scaled = rate * (values[position] as number);
        for (let slot = 0; slot < activeCount; slot++) {
          const label = active[slot] as number;
          weights[row + label] = (weights[row + label] as number) - scaled * (scores[label] as number);
        }
      }
    }
    if (options.l2 > 0) {
      const decay = Math.max(
        0,
        1 - options.learningRate * options.l2 * vectors.length * (1 - step / totalSteps),
      );
      for (let index = 0; index < weights.length; index++)
        weights[index] = (weights[index] as number) * decay;
    }
    onEpoch?.(epoch + 1);
  }
}

/**
 * The phrase index of phrase vectors over `featureCount` rows: a counting sort by row that keeps each
 * row's postings in phrase order, so the cosine sums run in the same order whether the index was
 * built now or read from disk.
 */
function buildPhraseIndex(vectors: readonly SparseVector[], featureCount: number): PhraseIndex {
  const norms = new Float64Array(vectors.length);
  if (vectors.length === 0) {
    return {
      starts: new Uint32Array(0),
      phraseNumbers: new Uint32Array(0),
      values: new Float32Array(0),
      norms,
    };
  }
  const starts = new Uint32Array(featureCount + 1);
  for (const { indices } of vectors)
    for (const row of indices) starts[row + 1] = (starts[row + 1] as number) + 1;
  for (let row = 0; row < featureCount; row++)
    starts[row + 1] = (starts[row + 1] as number) + (starts[row] as number);
  const postingCount = starts[featureCount] as number;
  const phraseNumbers = new Uint32Array(postingCount);
  const values = new Float32Array(postingCount);
  const next = starts.slice(0, featureCount);
  vectors.forEach(({ indices, values: phraseValues }, phraseNumber) => {
    let squared = 0;
    for (let position = 0; position < indices.length; position++) {
      const value = phraseValues[position] as number;
      squared += value * value;
      const row = indices[position] as number;
      const entry = next[row] as number;
      next[row] = entry + 1;
      phraseNumbers[entry] = phraseNumber;
      values[entry] = value;
    }
    norms[phraseNumber] = Math.sqrt(squared);
  });
  return { starts, phraseNumbers, values, norms };
}

/**
 * Whether a phrase index read from disk is whole: its offsets start at 0 and end at its size. Entries
 * are not checked one by one (a pass over them cost more than the rest of loading): the checksum has
 * already caught a damaged file, and a stray entry in a crafted one only skews a prediction, since
 * typed arrays ignore writes out of range.
 */
function isWellFormed({ starts, phraseNumbers }: PhraseIndex): boolean {
  if (starts.length === 0) return phraseNumbers.length === 0;
  return starts[0] === 0 && starts[starts.length - 1] === phraseNumbers.length;
}

/** Re-exported so callers can test a prediction against the out-of-scope label without a second import. */
export { NONE };
