import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * What a resumed Claude Code session has spent before this process: the `totalCostUSD` of the last
 * `cost-state` line in its session log (`<config>/projects/<folder>/<session>.jsonl`). Claude Code
 * restores that total when it resumes a session, so its `total_cost_usd` (and its `--max-budget-usd`
 * check) counts the earlier processes' spend again. 0 when there is no such log or line.
 */
export function resumedSessionCost(configDir: string | undefined, sessionId: string): number {
  const root = join(configDir ?? process.env['CLAUDE_CONFIG_DIR'] ?? join(homedir(), '.claude'), 'projects');
  if (!/^[\w-]+$/.test(sessionId) || !existsSync(root)) return 0;
  for (const folder of readdirSync(root)) {
    const log = join(root, folder, `${sessionId}.jsonl`);
    if (existsSync(log)) return lastCostState(log);
  }
  return 0;
}

function lastCostState(path: string): number {
  const text = readFileSync(path, 'utf8');
  for (let at = text.lastIndexOf('"cost-state"'); at !== -1; at = text.lastIndexOf('"cost-state"', at - 1)) {
    const start = text.lastIndexOf('\n', at) + 1;
    const end = text.indexOf('\n', at);
    try {
      const entry = JSON.parse(text.slice(start, end === -1 ? undefined : end)) as {
        type?: unknown;
        totalCostUSD?: unknown;
      };
      if (entry.type === 'cost-state' && typeof entry.totalCostUSD === 'number') return entry.totalCostUSD;
    } catch {
      // A line cut short (a killed process) or text quoting the name: look further back.
    }
    if (start === 0) break;
  }
  return 0;
}
