// Worker-thread entry: trains one HiddenLayerNetwork on vectors shared by the parent thread and writes
// its weights into the parent's shared buffers (see network-training.ts). Imported with `.ts`
// extensions (rewritten by the build) so it also runs straight from the sources under Node 22.
import { workerData } from 'node:worker_threads';
import { HiddenLayerNetwork } from './hidden-layer.ts';
import type { NetworkJob } from './network-training.ts';
import { WORKER_DONE, WORKER_FAILED, WORKER_STARTED, sharedVectors } from './network-training.ts';

const job = workerData as NetworkJob;
const status = new Int32Array(job.status);
Atomics.store(status, 0, WORKER_STARTED);
try {
  const network = HiddenLayerNetwork.train(
    sharedVectors(job),
    new Int32Array(job.targets),
    job.featureCount,
    job.classCount,
    job.options,
  );
  const weights = network.weights();
  new Int8Array(job.result.inputWeights).set(weights.inputWeights);
  new Float32Array(job.result.inputScales).set(weights.inputScales);
  new Float32Array(job.result.hiddenBias).set(weights.hiddenBias);
  new Int8Array(job.result.outputWeights).set(weights.outputWeights);
  new Float32Array(job.result.outputScales).set(weights.outputScales);
  new Float32Array(job.result.outputBias).set(weights.outputBias);
  Atomics.store(status, 0, WORKER_DONE);
} catch {
  Atomics.store(status, 0, WORKER_FAILED);
}
Atomics.notify(status, 0);
