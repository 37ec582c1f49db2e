import type { Worker } from 'node:worker_threads';
import type { RouterOptions } from '../route/router.js';
import type { RouteAnswer, RouteRequest } from './route-worker.js';

/** A router loading on its own thread: ask it once, or let it go. */
export interface InProcessRouter {
  /** The skills folder it routes with (for describing a server's decision). */
  readonly options: RouterOptions;
  route(request: RouteRequest, abortSignal: AbortSignal): Promise<RouteAnswer>;
  stop(): void;
}

/**
 * Starts loading the router (skills, model, ledger) on a worker thread at once, so that it loads while
 * the hook reads its input and asks a server. Router options must be plain data (no LLM tier).
 */
export async function startInProcessRouter(options: RouterOptions): Promise<InProcessRouter> {
  const { Worker } = await import('node:worker_threads');
  const worker: Worker = new Worker(new URL('./route-worker.js', import.meta.url), {
    workerData: options,
    // The thread's own output must never reach Claude Code: a hook's stdout is context for the model.
    stdout: true,
    stderr: true,
  });
  worker.stdout.resume();
  worker.stderr.resume();
  worker.unref();
  const answer = new Promise<RouteAnswer>((resolve) => {
    worker.once('message', resolve);
    worker.once('error', (error) => resolve({ error: error.message }));
    worker.once('exit', () => resolve({ error: 'the routing thread ended without an answer' }));
  });
  return {
    options,
    route(request, abortSignal) {
      worker.postMessage(request);
      return Promise.race([
        answer,
        new Promise<RouteAnswer>((resolve) => {
          if (abortSignal.aborted) resolve({ error: 'past the deadline' });
          abortSignal.addEventListener('abort', () => resolve({ error: 'past the deadline' }), {
            once: true,
          });
        }),
      ]);
    },
    stop() {
      void worker.terminate();
    },
  };
}
