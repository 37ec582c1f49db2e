// Claude Code calls through Switchboard beside direct `claude -p --output-format json`, in one run, against
// `switchboard sim` answering with zero delay. Run from the repository root under Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/claude-call.ts [rounds]
// Needs only this repository (the Agent SDK ships the Claude Code binary); binds 127.0.0.1 only.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import './source-hooks.ts';

const { startSimulator } = await import('../src/sim/server.js');
const { createClaudeCodeProvider } = await import('../src/providers/claude-code/claude-code-provider.js');
const { resolveClaudeExecutable } = await import('../src/providers/claude-code/executable.js');
const { percentile } = await import('../src/core/percentile.js');

const rounds = Number(process.argv[2] ?? 10);
const model = 'claude-haiku-4-5';
const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong: ', echo: true } }] },
  maxLifetimeMs: 600_000,
});
const configDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-claude-'));
const executable = resolveClaudeExecutable();
const environment = {
  ...process.env,
  ANTHROPIC_BASE_URL: sim.url,
  ANTHROPIC_API_KEY: 'sk-ant-bench',
  CLAUDE_CONFIG_DIR: configDir,
  // The same setting Switchboard uses, so both sides make the same single API request.
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  CLAUDE_CODE_MAX_RETRIES: '0',
};

/** What a shell user waits for: spawn `claude -p`, read its JSON, process exit. */
function direct(prompt: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(executable, ['-p', prompt, '--output-format', 'json', '--model', model], {
      env: environment,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', () => {
      try {
        const result = JSON.parse(output) as { result?: string };
        if (result.result !== `pong: ${prompt}`) throw new Error(`unexpected answer ${output.slice(0, 200)}`);
        resolve(performance.now() - started);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

const provider = createClaudeCodeProvider({
  baseUrl: sim.url,
  apiKey: 'sk-ant-bench',
  configDir,
  pool: { size: 4, model },
});
async function ours(prompt: string, warm: boolean): Promise<number> {
  const started = performance.now();
  // The pool serves only calls for its model; another model id of the same model starts cold.
  const result = await provider.call({ model: warm ? model : 'haiku', prompt });
  if (result.text !== `pong: ${prompt}`) throw new Error(`unexpected answer ${result.text}`);
  return performance.now() - started;
}

/** The `switchboard call` command as a shell user runs it (spawn to exit), from the build in dist/. */
const builtCli = join(import.meta.dirname, '../dist/cli/main.js');
function viaCli(prompt: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [builtCli, 'call', `claude:${model}`, prompt, '--base-url', sim.url, '--no-ledger'],
      {
        env: { ...environment, ANTHROPIC_API_KEY: 'sk-ant-bench' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', () =>
      output.trim() === `pong: ${prompt}`
        ? resolve(performance.now() - started)
        : reject(new Error(`unexpected answer ${output}`)),
    );
  });
}
const cliTimes: number[] = [];

// Warm-up of the binary's page cache, for both sides alike.
await direct('warm-up');
await ours('warm-up', false);

const directTimes: number[] = [];
const coldTimes: number[] = [];
for (let round = 0; round < rounds; round++) {
  // Alternate the order so neither side always runs on a quieter machine.
  if (round % 2 === 0) {
    directTimes.push(await direct(`direct ${round}`));
    coldTimes.push(await ours(`cold ${round}`, false));
  } else {
    coldTimes.push(await ours(`cold ${round}`, false));
    directTimes.push(await direct(`direct ${round}`));
  }
  if (existsSync(builtCli)) cliTimes.push(await viaCli(`cli ${round}`));
}

await provider.pool?.warm();
const warmTimes: number[] = [];
for (let round = 0; round < rounds * 3; round++) warmTimes.push(await ours(`warm ${round}`, true));

const concurrentStarted = performance.now();
const prompts = Array.from({ length: 20 }, (_, index) => `concurrent ${index}`);
const answers = await Promise.all(prompts.map((prompt) => provider.call({ model, prompt })));
const concurrentMs = performance.now() - concurrentStarted;
const ownAnswers = answers.filter((answer, index) => answer.text === `pong: ${prompts[index]}`).length;

/** Resident memory of a process group (the pooled process: a small parent-watch shell and Claude Code). */
function groupRssMegabytes(groupId: number): number {
  let kilobytes = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== groupId) continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      kilobytes += Number(rss?.[1] ?? 0);
    } catch {
      // The process ended while we looked.
    }
  }
  return kilobytes / 1024;
}
const pooled = (provider.pool?.pids ?? []).map(groupRssMegabytes);
await provider.close();
await sim.close();

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const p50 = (values: number[]) => percentile(sorted(values), 50);
const p95 = (values: number[]) => percentile(sorted(values), 95);
const ms = (value: number) => `${value.toFixed(0)} ms`;
console.log(
  `Claude Code ${executable.split('/').slice(-2).join('/')} against switchboard sim (zero delay), ${rounds} rounds`,
);
console.log(
  `direct claude -p --output-format json (spawn to exit): p50 ${ms(p50(directTimes))}, p95 ${ms(p95(directTimes))}`,
);
console.log(
  `switchboard cold call (library, to result):           p50 ${ms(p50(coldTimes))}, p95 ${ms(p95(coldTimes))}`,
);
console.log(
  `switchboard warm-pool call:                            p50 ${ms(p50(warmTimes))}, p95 ${ms(p95(warmTimes))} (${warmTimes.length} calls)`,
);
console.log(
  cliTimes.length === 0
    ? 'switchboard call CLI: skipped (no dist/ build; run scripts/setup.sh)'
    : `switchboard call CLI (spawn to exit, Node start included): p50 ${ms(p50(cliTimes))}, p95 ${ms(p95(cliTimes))}; ×${(p50(cliTimes) / p50(directTimes)).toFixed(2)} of direct`,
);
console.log(`cold / direct: ×${(p50(coldTimes) / p50(directTimes)).toFixed(2)} (target ≤ 1.05)`);
console.log(`direct / warm: ×${(p50(directTimes) / p50(warmTimes)).toFixed(1)} faster (target ≥ 10)`);
console.log(
  `20 concurrent calls through a pool of 4: ${ownAnswers}/20 answered to their own caller in ${ms(concurrentMs)}`,
);
console.log(
  `memory per pooled process: ${pooled.map((value) => `${value.toFixed(0)} MB`).join(', ')}; pool total ${pooled.reduce((a, b) => a + b, 0).toFixed(0)} MB`,
);
