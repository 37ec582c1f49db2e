import { killProcessTree, taggedProcesses } from '../providers/claude-code/process-group.js';

/** Environment variable that marks every process of one agent run, so all of them can be found and killed. */
export const PROCESS_TAG_VARIABLE = 'SWITCHBOARD_AGENT_TAG';

/** The tag of a run's processes: Claude Code, the commands its tools start, the verify command. */
export function runProcessTag(runId: string): string {
  return `switchboard-run-${runId}`;
}

/**
 * Kills a run's recorded child (Claude Code or the verify command) with its whole tree, including
 * commands Claude Code started in sessions of their own, and every process still carrying the run's
 * tag (orphans of a crashed runner). Works from any process of the same user, e.g. `agent cancel`.
 * Without a recorded child (a runner killed during setup or verify, between recording pids) the tagged
 * processes are found and killed all the same.
 */
export function killRunProcesses(pid: number | undefined, runId: string): number[] {
  const tag = { name: PROCESS_TAG_VARIABLE, value: runProcessTag(runId) };
  if (pid !== undefined && pid > 0) return killProcessTree(pid, tag);
  const killed = new Set<number>();
  for (const orphan of taggedProcesses(tag)) {
    if (killed.has(orphan) || orphan === process.pid) continue;
    for (const victim of killProcessTree(orphan, tag)) killed.add(victim);
  }
  return [...killed];
}

/**
 * Kills an agent's Claude Code process group, every process below it (Claude Code runs each Bash command
 * in a session of its own) and, on Linux, every process carrying its `processTag`. For a runner's
 * `cancel` from another process, with the pid `onSpawn` reported.
 */
export function killAgentProcesses(pid: number, processTag?: string): void {
  killProcessTree(
    pid,
    processTag === undefined ? undefined : { name: PROCESS_TAG_VARIABLE, value: processTag },
  );
}
