// Hybrid routing against an LLM that always answers right: how many requests reach the LLM at the
// threshold fitted for a 30% LLM budget, whether hybrid then matches llm-only accuracy, how the share
// falls after `route learn`, and what routing adds around the model. Run from the repository root:
//   node --experimental-strip-types --no-warnings bench/hybrid.ts [--only clinc150|briefs|scopes]
// Reads ../shared/data/{routing,clinc150} and ../shared/fixtures/skills; skips what is absent.
//
// The LLM tier is the official Anthropic SDK talking to `switchboard sim`, whose scenario is built here
// at run time from the dataset's own labels (one rule per request: "Request: <text>" → that label at
// confidence 0.95), so the simulated model is an oracle limited only by the candidates it is shown.
// Protocol: CLINC150 trains on train + oos_train, fits the threshold on the val texts (labels unused)
// for a 30% LLM share, streams val through hybrid into the ledger, learns from the confident LLM
// answers, and reports test + oos_test before and after. The dev sets have one split only: fit, stream
// and report all happen on it (in-sample, stated as such).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedDirectory } from './source-hooks.ts';
import type { LabelledExample } from '../src/core/route-types.js';
import type { ModeRun } from '../src/route/compare.js';
import type { RouterOptions } from '../src/route/router.js';

const { createRouter } = await import('../src/route/router.js');
const { compareModes } = await import('../src/route/compare.js');
const { fitForLlmShare } = await import('../src/route/evaluate.js');
const { loadDataset } = await import('../src/route/datasets.js');
const { collectLearnedExamples, writeLearnedExamples } = await import('../src/route/learn.js');
const { openLedger } = await import('../src/store/ledger.js');
const { startSimulator } = await import('../src/sim/server.js');
const { ProviderRegistry } = await import('../src/providers/registry.js');
const { summariseLatency } = await import('../src/route/metrics.js');
const { DEFAULT_MARGIN_THRESHOLD } = await import('../src/core/config.js');
const Anthropic = (await import('@anthropic-ai/sdk')).default;

const TARGET_SHARE = 0.3;
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** One oracle rule per distinct request, longest first so no request's rule catches a longer one. */
function oracleScenario(examples: readonly LabelledExample[]) {
  const byText = new Map(examples.map((example) => [example.text.trim(), example.expected]));
  const rules = [...byText.entries()]
    .sort(([a], [b]) => b.length - a.length)
    .map(([text, skill]) => ({
      match: { provider: 'anthropic' as const, text: `Request:\\s*${escapeRegExp(text)}\\s*$` },
      reply: {
        tool: { name: 'emit_output', input: { skill, confidence: 0.95, reasoning: 'oracle' } },
        usage: { input: 400, output: 30 },
      },
    }));
  return { rules };
}

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
const ms = (value: number) => value.toFixed(2);

interface Case {
  name: string;
  base: Omit<RouterOptions, 'mode'>;
  /** Unlabelled texts the threshold is fitted on. */
  fitTexts: string[];
  /** Traffic streamed through hybrid before `learn`. */
  stream: readonly LabelledExample[];
  test: readonly LabelledExample[];
  note: string;
}

async function rawSdkLatency(url: string) {
  const client = new Anthropic({ apiKey: 'sk-ant-bench', baseURL: url, maxRetries: 0 });
  const times: number[] = [];
  for (let index = 0; index < 200; index++) {
    const started = performance.now();
    await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 256,
      system: 'You route requests to skills. Answer only with the requested JSON.',
      messages: [{ role: 'user', content: 'Choose the one skill.\n\nRequest:\nraw sdk probe' }],
      tools: [{ name: 'emit_output', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'emit_output' },
    });
    times.push(performance.now() - started);
  }
  return summariseLatency(times);
}

async function runCase(item: Case): Promise<void> {
  const sim = await startSimulator({
    maxLifetimeMs: 3_600_000,
    scenario: {
      rules: [
        ...oracleScenario([...item.stream, ...item.test]).rules,
        {
          match: { provider: 'anthropic', text: 'raw sdk probe' },
          reply: {
            tool: { name: 'emit_output', input: { skill: 'none', confidence: 1, reasoning: 'probe' } },
          },
        },
      ],
    },
  });
  const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-hybrid-'));
  try {
    const providers = new ProviderRegistry({ anthropic: { apiKey: 'sk-ant-bench', baseUrl: sim.url } });
    const llm = {
      provider: 'anthropic:claude-haiku-4-5',
      timeoutMs: 10_000,
      callOptions: { providers, retry: { retriesPerProvider: 0 } },
    };
    const local = createRouter({ ...item.base, stateDir, mode: 'local', ledger: false, cache: false });
    const fitted = fitForLlmShare(local, item.fitTexts, TARGET_SHARE, DEFAULT_MARGIN_THRESHOLD);
    await local.close();
    const options = {
      ...item.base,
      stateDir,
      confidenceThreshold: fitted.confidenceThreshold,
      marginThreshold: fitted.marginThreshold,
      llm,
    };
    // One LLM call first, so the one-time cost of loading the SDK and connecting is not in the figures.
    const warm = createRouter({ ...options, mode: 'llm-only', ledger: false, cache: false });
    await warm.route(item.test[0]?.text ?? 'warm up');
    await warm.close();
    const before = await compareModes(options, ['local', 'hybrid', 'llm-only'], item.test);

    // Production traffic: the stream goes through hybrid with a ledger that keeps the text, then learn.
    const ledger = openLedger({ stateDir, storeText: true });
    const live = createRouter({ ...options, mode: 'hybrid', ledger, cache: false });
    for (const example of item.stream) await live.route(example.text);
    await live.close();
    const learned = await collectLearnedExamples(ledger);
    await ledger.close();
    writeLearnedExamples(stateDir, learned.examples);
    const after = await compareModes(options, ['hybrid'], item.test);

    const raw = await rawSdkLatency(sim.url);
    const byMode = (runs: readonly ModeRun[], mode: string) =>
      runs.find((run) => run.mode === mode) as ModeRun;
    const hybrid = byMode(before.modes, 'hybrid');
    const hybridAfter = byMode(after.modes, 'hybrid');
    const llmOnly = byMode(before.modes, 'llm-only');
    const localRun = byMode(before.modes, 'local');
    // What routing adds around the model: each request's time less the time inside the provider's
    // SDK call (the decision's `provider` timing), beside a raw SDK call to the same simulator.
    const overhead = hybrid.overhead;
    const llmRows = summariseLatency(
      hybrid.rows.filter((row) => row.timings.llm !== undefined).map((row) => row.durationMs),
    );
    const shareOf = (run: ModeRun, outOfScope: boolean) => {
      const rows = run.rows.filter((row) => (row.expected === 'none') === outOfScope);
      return rows.length === 0 ? 0 : rows.filter((row) => row.timings.llm !== undefined).length / rows.length;
    };
    const accuracy = (run: ModeRun) => percent(run.metrics.accuracyWithAlternates);
    console.log(`\n${item.name}: ${item.test.length} test requests (${item.note})`);
    console.log(
      `  fitted confidence threshold ${fitted.confidenceThreshold.toFixed(2)} for ≤ ${percent(TARGET_SHARE)} LLM ` +
        `share on ${fitted.count} fit texts (${percent(fitted.llmShare)} there)`,
    );
    console.log(
      `  accuracy: local ${accuracy(localRun)}, hybrid ${accuracy(hybrid)}, llm-only ${accuracy(llmOnly)}` +
        ` (hybrid − llm-only ${((hybrid.metrics.accuracyWithAlternates - llmOnly.metrics.accuracyWithAlternates) * 100).toFixed(1)} points)`,
    );
    console.log(
      `  macro-F1: local ${localRun.metrics.macroF1.toFixed(3)}, hybrid ${hybrid.metrics.macroF1.toFixed(3)}, ` +
        `llm-only ${llmOnly.metrics.macroF1.toFixed(3)}`,
    );
    console.log(
      `  LLM share: hybrid ${percent(hybrid.llmShare)} (llm-only ${percent(llmOnly.llmShare)}); ` +
        `cost per 1k: hybrid $${hybrid.costPer1k.toFixed(3)}, llm-only $${llmOnly.costPer1k.toFixed(3)}`,
    );
    console.log(
      `  hybrid LLM share by kind: in-scope ${percent(shareOf(hybrid, false))}, out-of-scope ${percent(shareOf(hybrid, true))} ` +
        `(out-of-scope rows are ${percent(item.test.filter((row) => row.expected === 'none').length / item.test.length)} of the test set)`,
    );
    console.log(
      `  after learning ${learned.examples.length} examples (${learned.fromLlm} from LLM answers) from ${item.stream.length} streamed: ` +
        `hybrid LLM share ${percent(hybrid.llmShare)} → ${percent(hybridAfter.llmShare)}, ` +
        `accuracy ${accuracy(hybrid)} → ${accuracy(hybridAfter)}`,
    );
    console.log(
      `  hybrid latency p50 ${ms(hybrid.metrics.latency.overall.p50)} ms, p95 ${ms(hybrid.metrics.latency.overall.p95)} ms; ` +
        `LLM requests p50 ${ms(llmRows.p50)} ms, p95 ${ms(llmRows.p95)} ms beside raw SDK calls to the same simulator ` +
        `p50 ${ms(raw.p50)} ms, p95 ${ms(raw.p95)} ms; routing overhead (model time excluded) ` +
        `p50 ${ms(overhead.p50)} ms, p95 ${ms(overhead.p95)} ms, p99 ${ms(overhead.p99)} ms`,
    );
  } finally {
    await sim.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const cases: Case[] = [];
const routingData = join(sharedDirectory, 'data/routing');
for (const name of ['briefs', 'scopes']) {
  const file = join(routingData, `${name}.dev.jsonl`);
  const skills = join(sharedDirectory, 'fixtures/skills', name);
  if (!existsSync(file) || !existsSync(skills)) {
    console.log(`skipped ${name}: ${file} or ${skills} not found`);
    continue;
  }
  const dev = loadDataset(file);
  cases.push({
    name,
    base: { skills },
    fitTexts: dev.map((example) => example.text),
    stream: dev,
    test: dev,
    note: 'dev set, in-sample: fit, stream and report on the same rows',
  });
}
const clinc = join(sharedDirectory, 'data/clinc150/data_full.json');
if (existsSync(clinc)) {
  const validation = loadDataset(`${clinc}#val,oos_val`);
  cases.push({
    name: 'clinc150',
    base: { training: [`${clinc}#train,oos_train`] },
    fitTexts: validation.map((example) => example.text),
    stream: validation,
    test: loadDataset(`${clinc}#test,oos_test`),
    note: 'fit and stream on val + oos_val, report test + oos_test',
  });
} else {
  console.log(`skipped clinc150: ${clinc} not found`);
}
for (const item of cases) {
  if (only === undefined || item.name === only) await runCase(item);
}
