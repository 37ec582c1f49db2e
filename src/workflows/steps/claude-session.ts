import type { CallRequest, CallResult } from '../../core/call-types.js';
import { isSwitchboardError } from '../../core/errors.js';
import type { CallOptions } from '../../invoke/call.js';
import type { AgentStep } from '../model.js';
import type { StepContext } from '../step-executor.js';

/** The event that records which Claude Code session a `session_key` reached: the key's memory. */
export const SESSION_EVENT = 'claude-session';

/** The session a step's `session_key` continues, in one working folder. */
export interface KeyedSession {
  key: string;
  /** The working folder Claude Code ran in ('' for its default): sessions are kept per folder. */
  cwd: string;
  /** The session to resume: the last one this run recorded for the key and folder. */
  resume?: string;
  /** What that session has cost in all (Claude Code's total, which a resumed session carries on). */
  totalUsd?: number;
}

/**
 * The session a step with `session_key` continues: the one the run's last execution under the same
 * key and folder recorded (in the run's events, so it survives `resume` and moves with the run to
 * another worker), or none for the first. Undefined for a step without a key.
 */
export async function keyedSession(
  context: StepContext,
  step: AgentStep,
  cwd: string | undefined,
): Promise<KeyedSession | undefined> {
  if (step.sessionKey === undefined || step.git !== undefined) return undefined;
  const folder = cwd ?? '';
  const recorded = (await context.runEvents?.(SESSION_EVENT)) ?? [];
  const last = recorded
    .filter((event) => event.data?.['sessionKey'] === step.sessionKey && event.data?.['cwd'] === folder)
    .at(-1);
  const id = last?.data?.['sessionId'];
  const total = last?.data?.['sessionTotalUsd'];
  return {
    key: step.sessionKey,
    cwd: folder,
    ...(typeof id === 'string' ? { resume: id } : {}),
    ...(typeof id === 'string' && typeof total === 'number' ? { totalUsd: total } : {}),
  };
}

/**
 * One Claude Code call in the keyed session: kept on disk, resuming the recorded one. A recorded
 * session Claude Code no longer has (it prunes transcripts) degrades to a fresh one, with an event
 * that says so, never a failed step. The session the call ended in is recorded for the next.
 */
export async function callInSession(
  context: StepContext,
  session: KeyedSession,
  call: { spec: string; request: CallRequest; options: CallOptions },
): Promise<CallResult> {
  const providerOptions = { ...call.options.providerOptions, persistSession: true };
  // The earlier total is passed on: Claude Code's own record of it is written only as its process exits.
  const resuming = (resume: string) => ({
    ...providerOptions,
    resume,
    ...(session.totalUsd === undefined ? {} : { resumedCostUsd: session.totalUsd }),
  });
  const attempt = (resume: string | undefined) =>
    context.call(call.spec, call.request, {
      ...call.options,
      providerOptions: resume === undefined ? providerOptions : resuming(resume),
    });
  let resumed = session.resume;
  let result: CallResult;
  try {
    result = await attempt(resumed);
  } catch (error) {
    const gone = isSwitchboardError(error) ? error.details?.['sessionNotFound'] : undefined;
    if (resumed === undefined || gone === undefined) throw error;
    await context.emit({
      type: 'session-restarted',
      data: {
        sessionKey: session.key,
        sessionId: resumed,
        reason: 'Claude Code no longer has the session (it prunes old transcripts); started a new one',
      },
    });
    resumed = undefined;
    result = await attempt(undefined);
  }
  if (result.sessionId !== undefined) {
    await context.emit({
      type: SESSION_EVENT,
      data: {
        sessionKey: session.key,
        cwd: session.cwd,
        sessionId: result.sessionId,
        continued: resumed !== undefined,
        sessionTotalUsd: (resumed === undefined ? 0 : (session.totalUsd ?? 0)) + (result.costUsd ?? 0),
      },
    });
  }
  return result;
}
