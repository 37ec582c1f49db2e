import { randomBytes } from 'node:crypto';
// Claude Code calls through Switchboard beside direct `claude -p --output-format json`, in one run, against
// `switchboard sim` answering with zero delay. Run from the repository root under Node >= 22:
//   node --experimental-strip-types --no-warnings bench/claude-call.ts [rounds] [--compare <checkout>] [--cli <launch.js or main.js>]
// The library rows run from the TypeScript sources; the CLI rows run the build in dist/ (`npm run build`
// first), or the `dist/cli/main.js` that `--cli` names. `--compare` also runs the warm pool of another checkout's sources (e.g. an earlier commit
// unpacked with `git archive`, with node_modules linked), in alternating blocks with this one's.
// Needs only this repository (the Agent SDK ships the Claude Code binary); binds 127.0.0.1 only.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type * as ProviderSources from '../src/providers/claude-code/claude-code-provider.ts';
import './source-hooks.ts';

type ProviderModule = typeof ProviderSources;
const { startSimulator } = await import('../src/sim/server.js');
const { createClaudeCodeProvider } =
  (await import('../src/providers/claude-code/claude-code-provider.js')) as ProviderModule;
const { resolveClaudeExecutable } = await import('../src/providers/claude-code/executable.js');
const { percentile } = await import('../src/core/percentile.js');

const compareIndex = process.argv.indexOf('--compare');
const compareRoot = compareIndex > 0 ? resolve(process.argv[compareIndex + 1] ?? '.') : undefined;
const rounds = Number(process.argv.slice(2).find((argument) => /^\d+$/.test(argument)) ?? 10);
const model = 'claude-haiku-4-5';
const loadAtStart = loadavg()[0] ?? 0;
const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong: ', echo: true } }] },
  maxLifetimeMs: 900_000,
});
const configDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-claude-'));
const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-state-'));
const executable = resolveClaudeExecutable();
const environment: Record<string, string | undefined> = {
  ...process.env,
  ANTHROPIC_BASE_URL: sim.url,
  ANTHROPIC_API_KEY: 'sk-ant-bench',
  CLAUDE_CONFIG_DIR: configDir,
  // The same setting Switchboard uses, so both sides make the same single API request.
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  CLAUDE_CODE_MAX_RETRIES: '0',
  SWITCHBOARD_SERVER: undefined,
};

/** Runs a command to its exit; resolves with its wall time when its stdout satisfies `check`. */
function timedRun(
  file: string,
  args: string[],
  check: (output: string) => boolean,
  env: Record<string, string | undefined> = environment,
): Promise<number> {
  const started = performance.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(file, args, { env, cwd: stateDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.on('exit', () =>
      check(output)
        ? resolvePromise(performance.now() - started)
        : reject(
            new Error(
              `${args.slice(0, 2).join(' ')}: unexpected output ${output.slice(0, 200)} ${errors.slice(0, 300)}`,
            ),
          ),
    );
  });
}

/** What a shell user waits for: spawn `claude -p`, read its JSON, process exit. */
function direct(prompt: string): Promise<number> {
  return timedRun(executable, ['-p', prompt, '--output-format', 'json', '--model', model], (output) => {
    try {
      return (JSON.parse(output) as { result?: string }).result === `pong: ${prompt}`;
    } catch {
      return false;
    }
  });
}

function libraryProvider(create: ProviderModule['createClaudeCodeProvider']) {
  return create({ baseUrl: sim.url, apiKey: 'sk-ant-bench', configDir, pool: { size: 4, model } });
}
const provider = libraryProvider(createClaudeCodeProvider);
const compared =
  compareRoot === undefined
    ? undefined
    : libraryProvider(
        (
          (await import(
            join(compareRoot, 'src/providers/claude-code/claude-code-provider.ts')
          )) as ProviderModule
        ).createClaudeCodeProvider,
      );

async function libraryCall(target: typeof provider, prompt: string, warm: boolean): Promise<number> {
  const started = performance.now();
  // The pool serves only calls for its model; another model id of the same model starts cold.
  const result = await target.call({ model: warm ? model : 'haiku', prompt });
  if (result.text !== `pong: ${prompt}`) throw new Error(`unexpected answer ${result.text}`);
  return performance.now() - started;
}

/**
 * The `switchboard call` command as a shell user runs it (spawn to exit), from the build in dist/:
 * through launch.js, the entry bin/switchboard runs (it turns on Node's compile cache).
 */
const cliIndex = process.argv.indexOf('--cli');
const builtCli =
  cliIndex > 0
    ? resolve(process.argv[cliIndex + 1] ?? '')
    : join(import.meta.dirname, '../dist/cli/launch.js');
function viaCli(prompt: string, server?: string): Promise<number> {
  const args = [builtCli, 'call', 'claude:haiku', prompt];
  if (server === undefined) args.push('--base-url', sim.url, '--no-ledger');
  else args.push('--server', server);
  return timedRun(process.execPath, args, (output) => output.trim() === `pong: ${prompt}`);
}

/** serve's token, fixed for the run: every route but /healthz wants it (loopback included). */
const serverToken = randomBytes(24).toString('hex');
const authorization = `Bearer ${serverToken}`;

/** Starts `switchboard serve` on a free port; its Claude Code processes reach the simulator through the environment. */
function startServe(): Promise<{ url: string; stop: () => void } | string> {
  return new Promise((resolvePromise) => {
    // serve needs skills for POST /route, whatever the bench calls.
    const skills = join(import.meta.dirname, '../examples/skills');
    const child = spawn(process.execPath, [builtCli, 'serve', '--port', '0', '--skills', skills], {
      env: { ...environment, SWITCHBOARD_SERVER_TOKEN: serverToken },
      cwd: stateDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url !== undefined) resolvePromise({ url, stop: () => child.kill('SIGTERM') });
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => resolvePromise(`serve exited with ${code}: ${output.trim().slice(0, 200)}`));
  });
}

/** The serve row's server, or why the row is skipped. */
async function serveForBench(): Promise<{ url: string; stop: () => void } | string> {
  if (!existsSync(builtCli)) return 'no dist/ build; run `npm run build`';
  const serve = await startServe();
  if (typeof serve === 'string') return serve;
  const probe = await fetch(`${serve.url}/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ spec: 'claude:haiku', prompt: 'warm-up' }),
  });
  await probe.text();
  if (probe.status === 404) {
    serve.stop();
    return 'serve has no /call';
  }
  return serve;
}

const directTimes: number[] = [];
const coldTimes: number[] = [];
const cliTimes: number[] = [];
const serveTimes: number[] = [];
const warmTimes: number[] = [];
const pacedTimes: number[] = [];
const comparedTimes: number[] = [];

// Warm-up of the binary's page cache, for both sides alike.
await direct('warm-up');
await libraryCall(provider, 'warm-up', false);
const serve = await serveForBench();

for (let round = 0; round < rounds; round++) {
  // Alternate the order so neither side always runs on a quieter moment.
  const steps: (() => Promise<void>)[] = [
    async () => void directTimes.push(await direct(`direct ${round}`)),
    async () => void coldTimes.push(await libraryCall(provider, `cold ${round}`, false)),
  ];
  if (existsSync(builtCli)) steps.push(async () => void cliTimes.push(await viaCli(`cli ${round}`)));
  if (typeof serve !== 'string') {
    steps.push(async () => void serveTimes.push(await viaCli(`serve ${round}`, serve.url)));
  }
  for (const step of round % 2 === 0 ? steps : steps.reverse()) await step();
}

// Warm calls back to back, in blocks alternating with the compared checkout's pool when there is one.
await provider.pool?.warm();
await compared?.pool?.warm();
for (let block = 0; block < 3; block++) {
  for (let call = 0; call < rounds; call++)
    warmTimes.push(await libraryCall(provider, `warm ${block} ${call}`, true));
  if (compared === undefined) continue;
  for (let call = 0; call < rounds; call++) {
    comparedTimes.push(await libraryCall(compared, `compared ${block} ${call}`, true));
  }
}
await compared?.close();
// A caller that pauses between calls (a hook, a shell loop): the pool tidies up in the pauses.
for (let call = 0; call < rounds * 2; call++) {
  await new Promise((resolvePause) => setTimeout(resolvePause, 250));
  pacedTimes.push(await libraryCall(provider, `paced ${call}`, true));
}

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
if (typeof serve !== 'string') serve.stop();
await sim.close();

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const p50 = (values: number[]) => percentile(sorted(values), 50);
const directP50 = p50(directTimes);
/** One row: p50, min–max, and how it compares with direct `claude -p` (×N faster, or ×N of it when slower). */
function row(label: string, values: number[] | string): string {
  if (typeof values === 'string') return `${label.padEnd(52)} skipped: ${values}`;
  if (values.length === 0) return `${label.padEnd(52)} skipped: no dist/ build; run \`npm run build\``;
  const median = p50(values);
  const ratio = directP50 / median;
  const versus =
    values === directTimes
      ? 'the reference'
      : ratio >= 1
        ? `×${ratio.toFixed(1)} faster than claude -p`
        : `×${(1 / ratio).toFixed(2)} of claude -p`;
  const range = `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)} ms`;
  return `${label.padEnd(52)} p50 ${median.toFixed(0).padStart(5)} ms (${range}, n=${values.length}); ${versus}`;
}

console.log(
  `Claude Code ${executable.split('/').slice(-2).join('/')} against switchboard sim (zero delay), ${rounds} rounds; ` +
    `1-min load ${loadAtStart.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`,
);
console.log(row('raw claude -p --output-format json (spawn to exit)', directTimes));
console.log(row('library cold call (to result)', coldTimes));
console.log(row('library warm pool of 4, calls back to back', warmTimes));
if (compareRoot !== undefined) console.log(row(`  the same from ${compareRoot}`, comparedTimes));
console.log(row('library warm pool of 4, a call every 250 ms', pacedTimes));
console.log(row('switchboard call claude:haiku, in process (CLI)', cliTimes));
console.log(
  row('switchboard call claude:haiku --server (CLI)', typeof serve === 'string' ? serve : serveTimes),
);
const warmRatio = directP50 / p50(warmTimes);
console.log(
  `verdict: warm pool ×${warmRatio.toFixed(1)} faster than claude -p at p50 (target ≥ 20): ${warmRatio >= 20 ? 'met' : 'not met'}`,
);
if (serveTimes.length > 0) {
  const serveRatio = directP50 / p50(serveTimes);
  console.log(
    `verdict: call through serve ×${serveRatio.toFixed(1)} faster (target ≥ 5): ${serveRatio >= 5 ? 'met' : 'not met'}`,
  );
}
console.log(
  `20 concurrent calls through a pool of 4: ${ownAnswers}/20 answered to their own caller in ${concurrentMs.toFixed(0)} ms`,
);
console.log(
  `memory per pooled process: ${pooled.map((value) => `${value.toFixed(0)} MB`).join(', ')}; pool total ${pooled.reduce((a, b) => a + b, 0).toFixed(0)} MB`,
);
