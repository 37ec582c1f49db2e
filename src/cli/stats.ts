import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { formatUsd } from '../core/format-usd.js';
import type { Ledger } from '../store/ledger.js';
import { commandConfig, type GlobalFlags } from './shared.js';

interface StatsFlags {
  since?: number;
  json?: boolean;
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30m`, `24h`, `7d` → epoch milliseconds that long ago. */
export function parseSince(value: string): number {
  const match = /^(\d+(?:\.\d+)?)([mhd])$/.exec(value.trim());
  if (match === null) throw new InvalidArgumentError('expected a duration such as 30m, 24h or 7d');
  return Date.now() - Number(match[1]) * (UNITS[match[2] as string] as number);
}

export interface BudgetStatus {
  scope: string;
  period: 'daily' | 'monthly';
  cap: number;
  spent: number;
  /** Held by calls and agent attempts in flight (estimates or cost caps, settled to real costs when they end). */
  reserved: number;
}

/** Spending against each cap in switchboard.yaml, today and this month (UTC). */
async function budgetStatus(
  ledger: Pick<Ledger, 'spendSince' | 'reservedAt'>,
  rules: SwitchboardConfig['call']['budgetRules'],
  now: number,
): Promise<BudgetStatus[]> {
  const date = new Date(now);
  const periods = [
    ['daily', Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())],
    ['monthly', Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)],
  ] as const;
  const statuses: BudgetStatus[] = [];
  for (const rule of rules) {
    const filter: { provider?: string; tag?: string } = {};
    if (rule.provider !== undefined) filter.provider = rule.provider;
    if (rule.tag !== undefined) filter.tag = rule.tag;
    const scope = [rule.provider ?? 'all providers', rule.tag].filter(Boolean).join(' ');
    for (const [period, since] of periods) {
      const cap = period === 'daily' ? rule.dailyUsd : rule.monthlyUsd;
      if (cap === undefined) continue;
      statuses.push({
        scope,
        period,
        cap,
        spent: await ledger.spendSince(since, filter),
        // What the cap counts as held: calls in flight, and reservations of this period no record settled.
        reserved: await ledger.reservedAt(now, { ...filter, since }),
      });
    }
  }
  return statuses;
}

/** What `switchboard stats --json` prints (and the MCP `stats` tool returns). */
export interface LedgerStats {
  calls: Awaited<ReturnType<Ledger['callStats']>>;
  routeDecisions: number;
  cooldowns: Array<Awaited<ReturnType<Ledger['activeCooldowns']>>[number] & { remainingMs: number }>;
  budgets: BudgetStatus[];
}

/** The ledger's figures since `since` (epoch ms; all time without it), and spending against each cap. */
export async function readStats(
  config: SwitchboardConfig,
  { since }: { since?: number } = {},
): Promise<LedgerStats> {
  const { openLedger } = await import('../store/ledger.js');
  const ledger = openLedger({ stateDir: config.stateDir });
  try {
    const range = since === undefined ? {} : { since };
    const calls = await ledger.callStats(range);
    const routeDecisions = await ledger.countRouteDecisions(range);
    const now = Date.now();
    const cooldowns = (await ledger.activeCooldowns(now)).map((cooldown) => ({
      ...cooldown,
      remainingMs: cooldown.until - now,
    }));
    const budgets = await budgetStatus(ledger, config.call.budgetRules, now);
    return { calls, routeDecisions, cooldowns, budgets };
  } finally {
    await ledger.close();
  }
}

export function registerStatsCommand(program: Command): void {
  program
    .command('stats')
    .description(
      'what the ledger recorded: calls, success rate, latency, tokens and cost by provider and model',
    )
    .option('--since <duration>', 'only the last 30m, 24h, 7d, …', parseSince)
    .option('--json', 'print the figures as JSON')
    .action(async (flags: StatsFlags, command: Command) => {
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
      const { calls, routeDecisions, cooldowns, budgets } = await readStats(
        config,
        flags.since === undefined ? {} : { since: flags.since },
      );
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify({ calls, routeDecisions, cooldowns, budgets })}\n`);
        return;
      }
      const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
      const lines = [
        `calls ${calls.calls} (${calls.attempts} attempts), success ${percent(calls.successRate)}, p50 ${calls.p50Ms.toFixed(0)} ms, p95 ${calls.p95Ms.toFixed(0)} ms, cost ${formatUsd(calls.costUsd)}`,
        `retries ${calls.retries}, fallback rate ${percent(calls.fallbackRate)}; route decisions ${routeDecisions}`,
      ];
      const { agents } = calls;
      if (agents.attempts > 0) {
        lines.push(
          `agent runs ${agents.runs} (${agents.attempts} attempts), cost ${formatUsd(agents.costUsd)}`,
        );
      }
      if (calls.byProviderModel.length > 0) {
        lines.push(
          '',
          'provider  model                          attempts  success   p50 ms   p95 ms   tokens in/out        cost',
        );
        for (const group of calls.byProviderModel) {
          lines.push(
            [
              group.provider.padEnd(9),
              group.model.slice(0, 30).padEnd(30),
              String(group.attempts).padStart(8),
              percent(group.successRate).padStart(8),
              group.p50Ms.toFixed(0).padStart(8),
              group.p95Ms.toFixed(0).padStart(8),
              `${group.inputTokens}/${group.outputTokens}`.padStart(15),
              `${formatUsd(group.costUsd)}${group.unpricedAttempts > 0 ? ` (+${group.unpricedAttempts} unpriced)` : ''}`.padStart(
                11,
              ),
            ].join(' '),
          );
        }
      }
      if (calls.byKey.length > 0) {
        lines.push('', 'gateway key               calls  success   tokens in/out        cost');
        for (const key of calls.byKey) {
          lines.push(
            [
              key.name.slice(0, 24).padEnd(24),
              String(key.calls).padStart(6),
              percent(key.calls === 0 ? 0 : key.successfulCalls / key.calls).padStart(8),
              `${key.inputTokens}/${key.outputTokens}`.padStart(15),
              formatUsd(key.costUsd).padStart(11),
            ].join(' '),
          );
        }
      }
      for (const cooldown of cooldowns) {
        lines.push(
          `breaker open: ${cooldown.spec}, half-open in ${Math.ceil(cooldown.remainingMs / 1000)} s (${cooldown.failures} failed requests, last ${cooldown.reason})`,
        );
      }
      for (const budget of budgets) {
        lines.push(
          `budget ${budget.scope}, ${budget.period}: ${formatUsd(budget.spent)} of $${budget.cap}` +
            (budget.cap > 0 ? ` (${percent(budget.spent / budget.cap)})` : ' (blocked)') +
            (budget.reserved > 0
              ? `, ${formatUsd(budget.reserved)} held by calls and agents in flight or not yet recorded`
              : ''),
        );
      }
      const codes = Object.entries(calls.errorCodes).sort((a, b) => b[1] - a[1]);
      if (codes.length > 0)
        lines.push('', `errors: ${codes.map(([code, count]) => `${code} ${count}`).join(', ')}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
