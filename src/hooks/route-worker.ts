import { parentPort, workerData } from 'node:worker_threads';
import type { RouteDecision, Skill } from '../core/route-types.js';
import type { RouterOptions } from '../route/router.js';

// The hook's in-process router, on a thread of its own: loading skills, a trained model or the ledger
// is synchronous work (a model trained from scratch takes seconds), and only a main thread left free
// keeps the hook's deadline a hard one. It starts loading before the prompt has been read.

/** What the hook asks the thread, once it has the prompt. */
export interface RouteRequest {
  text: string;
  tags: Record<string, string>;
}

/** The thread's one answer. */
export type RouteAnswer = { decision: RouteDecision; skill: Skill | undefined } | { error: string };

const options = workerData as RouterOptions;
const request = new Promise<RouteRequest>((resolve) => parentPort?.once('message', resolve));
try {
  const { createRouter } = await import('../route/router.js');
  const router = createRouter(options);
  try {
    const { text, tags } = await request;
    const decision = await router.route(text, { tags });
    const skill = router.skills.find((candidate) => candidate.name === decision.skill);
    parentPort?.postMessage({ decision, skill } satisfies RouteAnswer);
  } finally {
    await router.close();
  }
} catch (error) {
  parentPort?.postMessage({
    error: error instanceof Error ? error.message : String(error),
  } satisfies RouteAnswer);
}
