import { availableParallelism } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { HiddenLayerOptions, SparseVector } from './hidden-layer.js';
import { packTrainingSet, trainNetworks } from './network-training.js';

/** Forty vectors of two features each out of 6, two labels. */
const VECTORS: SparseVector[] = Array.from({ length: 40 }, (_, index) => ({
  indices: Int32Array.from([index % 6, (index * 7 + 1) % 6]),
  values: Float32Array.from([0.8, 0.6]),
}));
const TARGETS = Int32Array.from(VECTORS.map((_, index) => (index % 6 < 3 ? 0 : 1)));
const OPTIONS = (seed: number): HiddenLayerOptions => ({
  hiddenUnits: 8,
  epochs: 5,
  learningRate: 0.2,
  dropout: 0.2,
  inputDropout: 0.2,
  seed,
  gradientFloor: 1e-4,
});

function weightsOf(networks: ReturnType<typeof trainNetworks>): unknown[] {
  return networks.map((network) => {
    const weights = network.weights();
    return Object.values(weights).map((array) => Array.from(array as ArrayLike<number>));
  });
}

describe('trainNetworks', () => {
  afterEach(() => {
    delete process.env['SWITCHBOARD_TRAIN_IN_THREAD'];
  });

  it('trains the networks after the first on worker threads, with the same weights as in one thread', () => {
    const threads = { inWorkers: 0 };
    const progress: number[] = [];
    const parallel = trainNetworks(
      packTrainingSet(VECTORS, TARGETS),
      6,
      2,
      [OPTIONS(1), OPTIONS(2), OPTIONS(3)],
      (done, total) => {
        expect(total).toBe(15);
        progress.push(done);
      },
      threads,
    );
    expect(threads.inWorkers).toBe(availableParallelism() > 1 ? 2 : 0);
    expect(progress.at(-1)).toBe(15);

    process.env['SWITCHBOARD_TRAIN_IN_THREAD'] = '1';
    const alone = { inWorkers: 0 };
    const sequential = trainNetworks(
      packTrainingSet(VECTORS, TARGETS),
      6,
      2,
      [OPTIONS(1), OPTIONS(2), OPTIONS(3)],
      undefined,
      alone,
    );
    expect(alone.inWorkers).toBe(0);
    expect(weightsOf(parallel)).toEqual(weightsOf(sequential));
    // Different seeds give different networks: the comparison above is not of three copies of one.
    expect(weightsOf(parallel)[0]).not.toEqual(weightsOf(parallel)[1]);
  });
});
