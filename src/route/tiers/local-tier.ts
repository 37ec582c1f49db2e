import { createHash } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { NONE } from '../../core/route-types.js';
import { applyThresholds, isConfidentRefusal, ownThresholds, thresholdsFor } from '../fit.js';
import type { ThresholdSettings } from '../fit.js';
import { MODEL_VERSION, TextClassifier, type TrainingExample } from '../model/text-classifier.js';
import type { RouteTier, TierInput, TierVerdict } from '../tier.js';

/** How many model files a state folder keeps; older ones belong to skill sets that changed since. */
const KEPT_MODEL_FILES = 8;

export interface LocalModel {
  classifier: TextClassifier;
  /** Hash of everything the model was trained from; the cache file's name. */
  key: string;
  /** Whether this call trained the model (false: it came from the on-disk cache). */
  trained: boolean;
  /** Milliseconds spent training or loading. */
  durationMs: number;
}

/**
 * Returns the model for these training examples, from `<cacheDirectory>/<hash>.model` when an
 * identical training set was seen before, otherwise trained now (and cached when a folder is given).
 */
export function loadOrTrainModel(
  examples: readonly TrainingExample[],
  cacheDirectory: string | undefined,
  onProgress?: (done: number, total: number) => void,
): LocalModel {
  const started = performance.now();
  const key = hashTrainingSet(examples);
  const file = cacheDirectory === undefined ? undefined : join(cacheDirectory, `${key}.model`);
  if (file !== undefined) {
    const cached = readCachedModel(file);
    if (cached !== undefined) {
      return { classifier: cached, key, trained: false, durationMs: performance.now() - started };
    }
  }
  const classifier = TextClassifier.train(examples, {}, onProgress);
  if (file !== undefined && cacheDirectory !== undefined) writeCachedModel(cacheDirectory, file, classifier);
  return { classifier, key, trained: true, durationMs: performance.now() - started };
}

export function hashTrainingSet(examples: readonly TrainingExample[]): string {
  const hash = createHash('sha256');
  hash.update(MODEL_VERSION);
  for (const example of examples) {
    hash.update('\u0000');
    hash.update(example.label);
    hash.update('\u0001');
    hash.update(example.text);
  }
  return hash.digest('hex').slice(0, 24);
}

function readCachedModel(file: string): TextClassifier | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return undefined;
  }
  try {
    return TextClassifier.deserialize(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch {
    // A corrupt or outdated cache file is only a cache miss: retrain and overwrite it.
    return undefined;
  }
}

function writeCachedModel(directory: string, file: string, classifier: TextClassifier): void {
  try {
    mkdirSync(directory, { recursive: true });
    // Write then rename, so a concurrent reader never sees half a model.
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, classifier.serialize());
    renameSync(temporary, file);
    pruneModelFiles(directory);
  } catch {
    // The cache only saves time; routing goes on without it (read-only state folder, full disk).
  }
}

function pruneModelFiles(directory: string): void {
  const files = readdirSync(directory)
    .filter((name) => name.endsWith('.model'))
    .map((name) => ({ path: join(directory, name), modified: statSync(join(directory, name)).mtimeMs }))
    .sort((a, b) => b.modified - a.modified);
  for (const stale of files.slice(KEPT_MODEL_FILES)) unlinkSync(stale.path);
}

export interface LocalTierOptions extends ThresholdSettings {
  /** How many candidates a decision lists. */
  topCandidates: number;
}

/** The learned model as a routing tier: a probability per skill, abstaining when unsure. */
export class LocalTier implements RouteTier {
  readonly method = 'local' as const;
  private readonly classifier: TextClassifier;
  private readonly options: LocalTierOptions;

  constructor(classifier: TextClassifier, options: LocalTierOptions) {
    this.classifier = classifier;
    this.options = options;
  }

  decide({ text }: TierInput): TierVerdict {
    const predictions = this.classifier.predict(text);
    const candidates = predictions.map((prediction) => ({
      skill: prediction.label,
      score: prediction.probability,
    }));
    const verdict = applyThresholds(candidates, this.options);
    const top = candidates[0];
    const second = candidates[1];
    const { confidenceThreshold, marginThreshold } = thresholdsFor(this.options, top?.skill ?? NONE);
    // Say whose threshold refused, so a skill's own setting is never a mystery in the reasoning.
    const own = top === undefined ? undefined : ownThresholds(this.options.skills, top.skill);
    const whose = (field: 'confidenceThreshold' | 'marginThreshold'): string =>
      own?.[field] === undefined ? '' : `${top?.skill ?? '-'}'s `;
    const margin = (top?.score ?? 0) - (second?.score ?? 0);
    const listed = candidates
      .filter((candidate) => candidate.skill !== NONE)
      .slice(0, this.options.topCandidates);
    let reasoning: string;
    if (verdict.skill !== NONE) {
      reasoning = `model: ${verdict.skill} p=${format(top?.score)}, margin ${format(margin)} over ${second?.skill ?? 'nothing'}`;
    } else if (top?.skill === NONE) {
      reasoning = `model: out of scope is most likely (p=${format(top.score)})`;
    } else if ((top?.score ?? 0) < confidenceThreshold) {
      reasoning = `model: unsure, top ${top?.skill ?? '-'} p=${format(top?.score)} < ${whose('confidenceThreshold')}threshold ${confidenceThreshold}`;
    } else {
      reasoning = `model: ambiguous, ${top?.skill ?? '-'} leads ${second?.skill ?? '-'} by ${format(margin)} < ${whose('marginThreshold')}margin ${marginThreshold}`;
    }
    return {
      skill: verdict.skill,
      confidence: verdict.confidence,
      reasoning,
      candidates: listed,
      ranking: candidates.filter((candidate) => candidate.skill !== NONE),
      ...(isConfidentRefusal(candidates, this.options) ? { final: true } : {}),
    };
  }
}

function format(value: number | undefined): string {
  return (value ?? 0).toFixed(2);
}
