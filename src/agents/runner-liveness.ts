import { hostname } from 'node:os';
import { isRecordedProcessAlive } from './repo-lock.js';
import type { AgentRunRecord } from './run-store.js';

/** How often a runner stamps its run's heartbeat while it works. */
export const RUNNER_HEARTBEAT_MS = 10_000;
/**
 * A runner on another machine that has not stamped its run for this long is taken for gone: its pid
 * cannot be checked from here. Several heartbeats, so a slow database or a paused machine is not a death.
 */
export const RUNNER_STALE_MS = 60_000;

/** Whether the run's runner is (or was) on this machine, where its pid can be checked and signalled. */
export function isRunnerHere(run: Pick<AgentRunRecord, 'runnerHost'>): boolean {
  return run.runnerHost === undefined || run.runnerHost === hostname();
}

/**
 * Whether the run's runner still lives: on this machine by its pid (and the pid's start time), on
 * another by a heartbeat younger than `RUNNER_STALE_MS`.
 */
export function isRunnerAlive(
  run: Pick<AgentRunRecord, 'runnerPid' | 'runnerStarted' | 'runnerHost' | 'heartbeatAt'>,
  now = Date.now(),
): boolean {
  if (run.runnerPid === undefined) return false;
  if (isRunnerHere(run)) return isRecordedProcessAlive(run.runnerPid, run.runnerStarted);
  return run.heartbeatAt !== undefined && now - run.heartbeatAt < RUNNER_STALE_MS;
}

/** Where the runner is, for messages: `pid 123` here, `pid 123 on build-7` elsewhere. */
export function describeRunner(run: Pick<AgentRunRecord, 'runnerPid' | 'runnerHost'>): string {
  return isRunnerHere(run) ? `pid ${run.runnerPid}` : `pid ${run.runnerPid} on ${run.runnerHost}`;
}
