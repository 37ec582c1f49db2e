import { readFileSync } from 'node:fs';

/** The one-letter state in /proc/<pid>/stat (after the command name, which may hold spaces), or undefined once the process is gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}
