import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** How much of a session log is read at a time, from its end back. */
const CHUNK_BYTES = 1 << 20;
/** Claude Code ignores a cost line above this; so does this reader. */
const MAX_COST_USD = 1e9;

/**
 * What a resumed Claude Code session has spent before this process: the `totalCostUSD` of the last
 * `cost-state` line of that session in its log (`<config>/projects/<folder>/<session>.jsonl`). Claude
 * Code restores that total when it resumes a session, so its `total_cost_usd` counts the earlier
 * processes' spend again. 0 when there is no such log or line, or the log cannot be read.
 */
export function resumedSessionCost(configDir: string, sessionId: string): number {
  if (!/^[\w-]+$/.test(sessionId)) return 0;
  try {
    const root = join(configDir, 'projects');
    if (!existsSync(root)) return 0;
    for (const folder of readdirSync(root)) {
      const log = join(root, folder, `${sessionId}.jsonl`);
      if (existsSync(log)) return lastCostState(log, sessionId);
    }
  } catch {
    // An unreadable log: the attempt is counted at Claude Code's whole total, never less.
  }
  return 0;
}

/** Reads the log backwards a chunk at a time, so a long session costs one chunk, not its whole size. */
function lastCostState(path: string, sessionId: string): number {
  const fd = openSync(path, 'r');
  try {
    let end = fstatSync(fd).size;
    let carry = Buffer.alloc(0);
    while (end > 0) {
      const start = Math.max(0, end - CHUNK_BYTES);
      const chunk = Buffer.alloc(end - start);
      readSync(fd, chunk, 0, chunk.length, start);
      const text = Buffer.concat([chunk, carry]);
      // Everything before the first newline may be a cut line: kept for the next (earlier) chunk.
      const firstNewline = start === 0 ? -1 : text.indexOf(0x0a);
      const lines = text
        .subarray(firstNewline + 1)
        .toString('utf8')
        .split('\n');
      for (let index = lines.length - 1; index >= 0; index -= 1) {
        const cost = costOfLine(lines[index]!, sessionId);
        if (cost !== undefined) return cost;
      }
      carry = firstNewline === -1 ? Buffer.alloc(0) : text.subarray(0, firstNewline);
      end = start;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}

function costOfLine(line: string, sessionId: string): number | undefined {
  if (!line.includes('"cost-state"')) return undefined;
  try {
    // A write cut short by a kill can leave NUL bytes before the next line.
    const entry = JSON.parse(line.replace(/^\0+/, '')) as {
      type?: unknown;
      sessionId?: unknown;
      totalCostUSD?: unknown;
    };
    const cost = entry.totalCostUSD;
    if (entry.type !== 'cost-state' || entry.sessionId !== sessionId || typeof cost !== 'number')
      return undefined;
    return Number.isFinite(cost) && cost >= 0 && cost <= MAX_COST_USD ? cost : undefined;
  } catch {
    return undefined;
  }
}
