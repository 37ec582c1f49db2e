import type { Worker } from 'node:worker_threads';
import type { RouterOptions } from '../route/router.js';
import type { RouteAnswer, RouteRequest } from './route-worker.js';

/** A router on its own thread, started on demand or ahead of time: ask it once. */
export interface InProcessRouter {
  /** Its options (the skills folder describes a server's decision too). */
  readonly options: RouterOptions;
  /** Starts loading the router (skills, model, ledger) now, if not under way already. */
  start(): void;
  /** Routes one request, starting the thread first when needed. */
  route(request: RouteRequest, abortSignal: AbortSignal): Promise<RouteAnswer>;
}

/**
 * The hook's in-process router. Loading starts on `start()` (the hook calls it at once when there is
 * no server to ask, so the router loads while the input is read) or at the first `route()` (with a
 * server to ask first, a thread loading beside it would only compete with it for the CPU). Router
 * options must be plain data: no LLM tier.
 */
export function inProcessRouter(options: RouterOptions): InProcessRouter {
  let worker: Worker | undefined;
  let answer: Promise<RouteAnswer> | undefined;
  const start = (): Promise<RouteAnswer> => {
    if (answer !== undefined) return answer;
    const { Worker } = process.getBuiltinModule('node:worker_threads');
    const thread = new Worker(new URL('./route-worker.js', import.meta.url), {
      workerData: options,
      // The thread's own output must never reach Claude Code: a hook's stdout is context for the model.
      stdout: true,
      stderr: true,
    });
    thread.stdout.resume();
    thread.stderr.resume();
    thread.unref();
    worker = thread;
    answer = new Promise<RouteAnswer>((resolve) => {
      thread.once('message', resolve);
      thread.once('error', (error) => resolve({ error: error.message }));
      thread.once('exit', () => resolve({ error: 'the routing thread ended without an answer' }));
    });
    return answer;
  };
  return {
    options,
    start() {
      void start();
    },
    route(request, abortSignal) {
      const answered = start();
      worker?.postMessage(request);
      return Promise.race([
        answered,
        new Promise<RouteAnswer>((resolve) => {
          if (abortSignal.aborted) resolve({ error: 'past the deadline' });
          abortSignal.addEventListener('abort', () => resolve({ error: 'past the deadline' }), {
            once: true,
          });
        }),
      ]);
    },
  };
}
