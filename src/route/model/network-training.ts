import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { HiddenLayerNetwork, type HiddenLayerOptions, type SparseVector } from './hidden-layer.ts';

/**
 * Trains several networks (one per seed) at once: the first in this thread, the others each on a
 * worker thread, when the machine has more than one core. The call stays synchronous, as training
 * always was: this thread waits on an Atomics flag for the workers. A worker that cannot start or
 * fails is replaced by training its network here, so the result never depends on threads: the same
 * code and seeds give the same weights either way.
 */

/** Worker status values in the shared status word. */
export const WORKER_STARTED = 1;
export const WORKER_DONE = 2;
export const WORKER_FAILED = 3;

/** How long a worker may take to start running after this thread finished its own network. */
const WORKER_START_GRACE_MS = 10_000;

/** What a worker thread is handed: the training set and where to write the network. */
export interface NetworkJob {
  /** Vector `n` spans `offsets[n]`..`offsets[n + 1]` of `indices` and `values`. */
  offsets: SharedArrayBuffer;
  indices: SharedArrayBuffer;
  values: SharedArrayBuffer;
  targets: SharedArrayBuffer;
  featureCount: number;
  classCount: number;
  options: HiddenLayerOptions;
  status: SharedArrayBuffer;
  result: {
    inputWeights: SharedArrayBuffer;
    inputScales: SharedArrayBuffer;
    hiddenBias: SharedArrayBuffer;
    outputWeights: SharedArrayBuffer;
    outputScales: SharedArrayBuffer;
    outputBias: SharedArrayBuffer;
  };
}

/** The vectors of a job, as views on its shared buffers. */
export function sharedVectors(job: Pick<NetworkJob, 'offsets' | 'indices' | 'values'>): SparseVector[] {
  const offsets = new Int32Array(job.offsets);
  const indices = new Int32Array(job.indices);
  const values = new Float32Array(job.values);
  const vectors: SparseVector[] = [];
  for (let vector = 0; vector + 1 < offsets.length; vector++) {
    const [start, end] = [offsets[vector] as number, offsets[vector + 1] as number];
    vectors.push({ indices: indices.subarray(start, end), values: values.subarray(start, end) });
  }
  return vectors;
}

/**
 * Trains one network per entry of `optionsList` on the same training set (`packTrainingSet`: in
 * shared memory, which the worker threads read without a copy). `onProgress` hears of the
 * networks trained in this thread, epoch by epoch, and of each worker's network when it is in;
 * `threads.inWorkers` counts the networks a worker thread trained.
 */
export function trainNetworks(
  set: SharedTrainingSet,
  featureCount: number,
  classCount: number,
  optionsList: readonly HiddenLayerOptions[],
  onProgress?: (done: number, total: number) => void,
  threads: { inWorkers: number } = { inWorkers: 0 },
): HiddenLayerNetwork[] {
  const epochs = optionsList.reduce((total, options) => total + options.epochs, 0);
  let done = 0;
  const vectors = sharedVectors(set);
  const targets = new Int32Array(set.targets);
  const trainHere = (options: HiddenLayerOptions): HiddenLayerNetwork =>
    HiddenLayerNetwork.train(vectors, targets, featureCount, classCount, options, () =>
      onProgress?.(++done, epochs),
    );
  const workerFile = fileURLToPath(
    new URL(`./network-worker${extensionOf(import.meta.url)}`, import.meta.url),
  );
  const useWorkers =
    optionsList.length > 1 &&
    availableParallelism() > 1 &&
    existsSync(workerFile) &&
    !process.env['SWITCHBOARD_TRAIN_IN_THREAD'];
  if (!useWorkers) return optionsList.map(trainHere);

  const started = optionsList
    .slice(1)
    .map((options) => startWorker(workerFile, set, featureCount, classCount, options));
  const networks = [trainHere(optionsList[0] as HiddenLayerOptions)];
  started.forEach((running, position) => {
    const options = optionsList[position + 1] as HiddenLayerOptions;
    const network = running === undefined ? undefined : collect(running, featureCount, classCount, options);
    if (network === undefined) {
      networks.push(trainHere(options));
      return;
    }
    threads.inWorkers++;
    done += options.epochs;
    onProgress?.(done, epochs);
    networks.push(network);
  });
  return networks;
}

function extensionOf(url: string): string {
  return url.endsWith('.ts') ? '.ts' : '.js';
}

/** Training vectors packed end to end, and their labels, in shared memory. */
export type SharedTrainingSet = Pick<NetworkJob, 'offsets' | 'indices' | 'values' | 'targets'>;

/**
 * Packs vectors and labels into shared memory. The packed set is the only copy training needs: the
 * caller's vectors (many small arrays) can go before the networks' weights are allocated.
 */
export function packTrainingSet(vectors: readonly SparseVector[], targets: Int32Array): SharedTrainingSet {
  const total = vectors.reduce((sum, vector) => sum + vector.indices.length, 0);
  const offsets = new Int32Array(new SharedArrayBuffer(4 * (vectors.length + 1)));
  const indices = new Int32Array(new SharedArrayBuffer(4 * total));
  const values = new Float32Array(new SharedArrayBuffer(4 * total));
  let position = 0;
  vectors.forEach((vector, index) => {
    offsets[index] = position;
    indices.set(vector.indices, position);
    values.set(vector.values, position);
    position += vector.indices.length;
  });
  offsets[vectors.length] = position;
  const sharedTargets = new Int32Array(new SharedArrayBuffer(4 * targets.length));
  sharedTargets.set(targets);
  return {
    offsets: offsets.buffer as SharedArrayBuffer,
    indices: indices.buffer as SharedArrayBuffer,
    values: values.buffer as SharedArrayBuffer,
    targets: sharedTargets.buffer as SharedArrayBuffer,
  };
}

interface RunningWorker {
  worker: Worker;
  job: NetworkJob;
}

function startWorker(
  file: string,
  shared: SharedTrainingSet,
  featureCount: number,
  classCount: number,
  options: HiddenLayerOptions,
): RunningWorker | undefined {
  const units = options.hiddenUnits;
  const job: NetworkJob = {
    ...shared,
    featureCount,
    classCount,
    options,
    status: new SharedArrayBuffer(4),
    result: {
      inputWeights: new SharedArrayBuffer(featureCount * units),
      inputScales: new SharedArrayBuffer(4 * featureCount),
      hiddenBias: new SharedArrayBuffer(4 * units),
      outputWeights: new SharedArrayBuffer(units * classCount),
      outputScales: new SharedArrayBuffer(4 * units),
      outputBias: new SharedArrayBuffer(4 * classCount),
    },
  };
  try {
    const worker = new Worker(file, { workerData: job });
    // Errors surface through the status word; an 'error' listener keeps one from becoming uncaught.
    worker.on('error', () => undefined);
    worker.unref();
    return { worker, job };
  } catch {
    return undefined;
  }
}

/** Waits for a worker's network; undefined when it failed or never started (the caller trains it here). */
function collect(
  running: RunningWorker,
  featureCount: number,
  classCount: number,
  options: HiddenLayerOptions,
): HiddenLayerNetwork | undefined {
  const status = new Int32Array(running.job.status);
  const startBy = Date.now() + WORKER_START_GRACE_MS;
  for (;;) {
    const state = Atomics.load(status, 0);
    if (state === WORKER_DONE) break;
    if (state === WORKER_FAILED || (state === 0 && Date.now() > startBy)) {
      void running.worker.terminate();
      return undefined;
    }
    Atomics.wait(status, 0, state, 100);
  }
  void running.worker.terminate();
  const { result } = running.job;
  return new HiddenLayerNetwork(featureCount, options.hiddenUnits, classCount, {
    inputWeights: new Int8Array(result.inputWeights),
    inputScales: new Float32Array(result.inputScales),
    hiddenBias: new Float32Array(result.hiddenBias),
    outputWeights: new Int8Array(result.outputWeights),
    outputScales: new Float32Array(result.outputScales),
    outputBias: new Float32Array(result.outputBias),
  });
}
