import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { startGateway } from './helpers/gateway-server.js';
import { createTestDatabase, POSTGRES_SKIP } from './helpers/postgres.js';
import { killServers } from './helpers/serve-process.js';
import { killWorkers, startWorker, untilWorkflowStatus, workerMachine } from './helpers/worker-process.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// Traces as a user gets them: the built CLI's processes, the official SDKs over HTTP to `switchboard
// sim`, and a real OTLP/HTTP receiver on 127.0.0.1 that decodes what the exporter sends.

const OPENAI_KEY = 'sk-proj-tracing-key-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-api03-tracing-key-0123456789abcdef';
/** A secret a user pasted into a prompt: it must never reach the collector. */
const PLANTED = 'sk-proj-PLANTEDsecret9Xq2v7Lm4Rt8Wz1Ky6Nb3';

let sim: Simulator;
let receiver: OtlpReceiver;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        { match: { provider: 'anthropic', text: 'fall back' }, fault: { kind: 'overload' } },
        { match: { text: 'refuse this one' }, fault: { kind: 'status', status: 400 } },
        // The second step of the run killed mid-step waits for an answer that never comes, once.
        { match: { text: 'second step of the killed run' }, times: 1, fault: { kind: 'stall' } },
        {
          match: { provider: 'openai' },
          reply: { text: 'the weather is fine', usage: { input: 12, output: 5 } },
        },
      ],
    },
  });
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
  await sim.close();
});

function folder(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-tracing-'));
  writeFileSync(join(cwd, 'switchboard.yaml'), 'call: { retries_per_provider: 0 }\n');
  return cwd;
}

function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    OPENAI_API_KEY: OPENAI_KEY,
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    ANTHROPIC_BASE_URL: sim.url,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: 'tracing-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=collector-secret-0123456789',
    ...extra,
  };
}

function run(args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return runCli(args, { cwd, env: environment(extra) });
}

/** The spans of the trace whose root is named `root`, received since `from`. */
function traceOf(root: string, from: number): ReceivedSpan[] {
  const spans = receiver.spans.slice(from);
  const top = spans.find((span) => span.name === root && span.parentSpanId === undefined);
  expect(top, `no root span ${root} among ${spans.map((span) => span.name).join(', ')}`).toBeDefined();
  return spans.filter((span) => span.traceId === top?.traceId);
}

function childrenOf(parent: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  return spans.filter((span) => span.parentSpanId === parent.spanId);
}

const received = (from: number): string => Buffer.concat(receiver.bodies.slice(from)).toString('utf8');

describe('OpenTelemetry traces of calls', () => {
  it('sends a call span with its attempt as a GenAI chat span, and no prompt text by default', async () => {
    const spansFrom = receiver.spans.length;
    const bodiesFrom = receiver.bodies.length;
    const result = await run(
      ['call', 'openai:gpt-4.1-mini', `what is the weather? my key is ${PLANTED}`],
      folder(),
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('the weather is fine');
    expect(result.stderr).toBe('');
    const spans = traceOf('call openai:gpt-4.1-mini', spansFrom);
    const [callSpan] = spans.filter((span) => span.parentSpanId === undefined);
    const attempts = childrenOf(callSpan as ReceivedSpan, spans);
    expect(attempts.map((span) => span.name)).toEqual(['chat gpt-4.1-mini']);
    expect(attempts[0]?.kind).toBe(3); // CLIENT
    expect(attempts[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1-mini',
      'gen_ai.response.model': 'gpt-4.1-mini',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.response.finish_reasons': ['stop'],
    });
    expect(callSpan?.attributes['switchboard.cost_usd']).toBeGreaterThan(0);
    expect(callSpan?.resource).toMatchObject({
      'service.name': 'tracing-test',
      'deployment.environment.name': 'test',
    });
    const bytes = received(bodiesFrom);
    expect(bytes).not.toContain(PLANTED);
    expect(bytes).not.toContain('what is the weather');
    expect(bytes).not.toContain('gen_ai.input.messages');
    expect(bytes).not.toContain(OPENAI_KEY);
    expect(bytes).not.toContain('collector-secret');
    // The exporter sent the user's OTEL_EXPORTER_OTLP_HEADERS to the collector, and only there.
    expect(receiver.headers.at(-1)?.['x-collector-token']).toBe('collector-secret-0123456789');
  });

  it('with content capture on, sends the prompt and the answer, redacted', async () => {
    const spansFrom = receiver.spans.length;
    const bodiesFrom = receiver.bodies.length;
    const result = await run(
      ['call', 'openai:gpt-4.1-mini', `what is the weather? my key is ${PLANTED}`],
      folder(),
      { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
    );
    expect(result.status, result.stderr).toBe(0);
    const [attempt] = traceOf('call openai:gpt-4.1-mini', spansFrom).filter(
      (span) => span.name === 'chat gpt-4.1-mini',
    );
    const input = JSON.parse(String(attempt?.attributes['gen_ai.input.messages'])) as unknown;
    expect(input).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'what is the weather? my key is [redacted]' }] },
    ]);
    expect(JSON.parse(String(attempt?.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'the weather is fine' }] },
    ]);
    expect(received(bodiesFrom)).not.toContain(PLANTED);
  });

  it('sends one span per attempt down a fallback chain, the failed one with its error.type', async () => {
    const spansFrom = receiver.spans.length;
    const spec = 'anthropic:claude-sonnet-4-6,openai:gpt-4.1-mini';
    const result = await run(['call', spec, 'please fall back'], folder());
    expect(result.status, result.stderr).toBe(0);
    const spans = traceOf(`call ${spec}`, spansFrom);
    const [callSpan] = spans.filter((span) => span.parentSpanId === undefined);
    const attempts = childrenOf(callSpan as ReceivedSpan, spans);
    expect(attempts.map((span) => [span.name, span.attributes['gen_ai.provider.name']])).toEqual([
      ['chat claude-sonnet-4-6', 'anthropic'],
      ['chat gpt-4.1-mini', 'openai'],
    ]);
    expect(attempts[0]?.attributes['error.type']).toBe('OVERLOADED');
    expect(attempts[0]?.status.code).toBe(2); // ERROR
    expect(attempts[1]?.attributes['error.type']).toBeUndefined();
    expect(callSpan?.attributes['switchboard.call.attempts']).toBe(2);
    expect(callSpan?.status.code).not.toBe(2);
  });

  it('a collector that is down does not fail or hold up the command: one warning line at most', async () => {
    const down = await startOtlpReceiver();
    const url = down.url;
    await down.close();
    const result = await run(['call', 'openai:gpt-4.1-mini', 'what is the weather?'], folder(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
    });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('the weather is fine');
    const lines = result.stderr.split('\n').filter((line) => line !== '');
    expect(lines.length).toBeLessThanOrEqual(1);
    if (lines.length === 1) expect(lines[0]).toMatch(/^switchboard: warning: traces not sent to /);
  });
});

function workflowFolder(name: string): string {
  const cwd = folder();
  writeFileSync(
    join(cwd, 'flow.yaml'),
    [
      'workflow:',
      `  name: ${name}`,
      '  entry_point: first',
      '  runtime: { provider: openai, default_model: gpt-4.1-mini }',
      'agents:',
      '  - name: first',
      '    type: agent',
      `    prompt: first step of the ${name} run`,
      '    routes: [{ to: second }]',
      '  - name: second',
      '    type: agent',
      `    prompt: second step of the ${name} run`,
      '    routes: [{ to: $end }]',
      '',
    ].join('\n'),
  );
  return cwd;
}

describe('OpenTelemetry traces of workflow runs', () => {
  it("nests each step, its call and the call's attempt under the run's span", async () => {
    const spansFrom = receiver.spans.length;
    const result = await run(
      ['workflow', 'run', 'flow.yaml', '--run-id', 'traced'],
      workflowFolder('traced'),
    );
    expect(result.status, result.stderr).toBe(0);
    const spans = traceOf('workflow traced', spansFrom);
    const [root] = spans.filter((span) => span.parentSpanId === undefined);
    expect(root?.attributes).toMatchObject({
      'switchboard.workflow.name': 'traced',
      'switchboard.run.id': 'traced',
      'switchboard.run.status': 'completed',
    });
    const steps = childrenOf(root as ReceivedSpan, spans);
    expect(steps.map((span) => span.name)).toEqual(['step first', 'step second']);
    for (const step of steps) {
      expect(step.attributes).toMatchObject({
        'switchboard.run.id': 'traced',
        'switchboard.step.status': 'completed',
      });
      const calls = childrenOf(step, spans);
      expect(calls.map((span) => span.name)).toEqual(['call openai:gpt-4.1-mini']);
      const attempts = childrenOf(calls[0] as ReceivedSpan, spans);
      expect(attempts.map((span) => span.name)).toEqual(['chat gpt-4.1-mini']);
      expect(attempts[0]?.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.usage.input_tokens': 12,
      });
    }
    expect(root?.attributes['switchboard.cost_usd']).toBeGreaterThan(0);
  });

  it('a failed step and its run are error spans carrying the error code', async () => {
    const spansFrom = receiver.spans.length;
    const cwd = folder();
    writeFileSync(
      join(cwd, 'broken.yaml'),
      [
        'workflow:',
        '  name: broken',
        '  entry_point: fail',
        '  runtime: { provider: openai, default_model: gpt-4.1-mini }',
        'agents:',
        '  - name: fail',
        '    type: agent',
        '    prompt: refuse this one',
        '    routes: [{ to: $end }]',
        '',
      ].join('\n'),
    );
    const result = await run(['workflow', 'run', 'broken.yaml', '--json'], cwd);
    expect(result.status).not.toBe(0);
    const { errorCode } = JSON.parse(result.stdout) as { errorCode: string };
    const spans = traceOf('workflow broken', spansFrom);
    const root = spans.find((span) => span.parentSpanId === undefined);
    const step = spans.find((span) => span.name === 'step fail');
    for (const span of [root, step]) {
      expect(span?.status.code).toBe(2); // ERROR
      expect(span?.attributes['error.type']).toBe(errorCode);
    }
  });

  it('a run killed mid-step and resumed in another process stays one trace', async () => {
    const cwd = workflowFolder('killed');
    const spansFrom = receiver.spans.length;
    // Spans are sent every 100 ms, so the first process's finished step reaches the receiver before it dies.
    const env = environment({ OTEL_BSP_SCHEDULE_DELAY: '100' });
    const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
    const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'killed'], {
      cwd,
      env,
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const firstStep = () =>
      receiver.spans
        .slice(spansFrom)
        .find((span) => span.name === 'step first' && span.attributes['switchboard.run.id'] === 'killed');
    await waitFor(
      () =>
        firstStep() !== undefined &&
        sim.requests.some((entry) => entry.text === 'second step of the killed run'),
      { what: "the first step traced and the second step's request sent" },
    );
    child.kill('SIGKILL');
    await exited;
    const before = firstStep() as ReceivedSpan;

    const resumed = await run(['workflow', 'resume', 'killed'], cwd);
    expect(resumed.status, resumed.stderr).toBe(0);
    const continued = receiver.spans
      .slice(spansFrom)
      .find(
        (span) => span.name === 'workflow killed' && span.attributes['switchboard.run.continued'] === true,
      );
    expect(continued, "the resumed run's span").toBeDefined();
    // The same trace, under the killed process's run span (the parent of its first step).
    expect(continued?.traceId).toBe(before.traceId);
    expect(continued?.parentSpanId).toBe(before.parentSpanId);
    const second = receiver.spans.filter(
      (span) => span.name === 'step second' && span.parentSpanId === continued?.spanId,
    );
    expect(second).toHaveLength(1);
    expect(second[0]?.attributes['switchboard.step.status']).toBe('completed');
    expect(childrenOf(second[0] as ReceivedSpan, receiver.spans).map((span) => span.name)).toEqual([
      'call openai:gpt-4.1-mini',
    ]);
  });
});

describe('OpenTelemetry traces of routing and the gateway', () => {
  it('sends a span for a route decision with the skill it chose', async () => {
    const spansFrom = receiver.spans.length;
    const cwd = folder();
    const skills = join(import.meta.dirname, '..', 'examples/skills');
    const result = await run(
      [
        '--state-dir',
        join(cwd, 'state'),
        'route',
        '--skills',
        skills,
        'deploy the new version to production',
      ],
      cwd,
    );
    expect(result.status, result.stderr).toBe(0);
    const [route] = traceOf('route', spansFrom);
    expect(route?.attributes).toMatchObject({ 'switchboard.route.method': expect.any(String) });
    expect(typeof route?.attributes['switchboard.route.skill']).toBe('string');
    expect(route?.attributes['switchboard.route.decision.id']).toEqual(expect.any(String));
    expect(received(0)).not.toContain('deploy the new version');
  });

  it("a gateway request is a server span under the client's traceparent, its attempt under it", async () => {
    const children = new Set<ChildProcess>();
    const gateway = await startGateway({
      name: 'tracing-gateway',
      yaml: undefined,
      env: {
        OPENAI_API_KEY: OPENAI_KEY,
        OPENAI_BASE_URL: sim.openAiBaseUrl,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      children,
    });
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const clientSpan = '00f067aa0ba902b7';
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${gateway.token}`,
          traceparent: `00-${traceId}-${clientSpan}-01`,
        },
        body: JSON.stringify({
          model: 'openai:gpt-4.1-mini',
          messages: [{ role: 'user', content: `hello, my key is ${PLANTED}` }],
        }),
      });
      expect(response.status, await response.text()).toBe(200);
      const inTrace = () => receiver.spans.filter((span) => span.traceId === traceId);
      await waitFor(() => inTrace().some((span) => span.name.startsWith('chat ')), {
        what: "the gateway request's spans",
      });
      const spans = inTrace();
      const server = spans.find((span) => span.name === 'POST /v1/chat/completions');
      expect(server).toMatchObject({ parentSpanId: clientSpan, kind: 2 }); // SERVER
      expect(server?.attributes).toMatchObject({
        'http.request.method': 'POST',
        'switchboard.gateway.wire': 'chat',
      });
      // The native lane relays the client's own request: its attempt is the request's child.
      const attempts = childrenOf(server as ReceivedSpan, spans);
      expect(attempts.map((span) => span.name)).toEqual(['chat gpt-4.1-mini']);
      expect(attempts[0]?.attributes).toMatchObject({
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4.1-mini',
        'gen_ai.response.model': 'gpt-4.1-mini',
      });
      expect(received(0)).not.toContain(PLANTED);
      expect(received(0)).not.toContain(gateway.token);
    } finally {
      killServers(children);
      await gateway.close();
    }
  });
});

describe.skipIf(POSTGRES_SKIP !== undefined)('OpenTelemetry traces of runs on workers', () => {
  it('a run enqueued on one machine and advanced by a worker on another is one trace', async () => {
    const database = await createTestDatabase();
    const children = new Set<ChildProcess>();
    try {
      const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-tracing-workers-')));
      writeFileSync(
        join(root, 'relay.yaml'),
        [
          'workflow:',
          '  name: relay',
          '  entry_point: greet',
          'agents:',
          '  - name: greet',
          '    type: set',
          '    value: hello',
          '    routes: [{ to: shout }]',
          '  - name: shout',
          '    type: script',
          '    command: sh',
          '    args: ["-c", "echo HELLO"]',
          '    routes: [{ to: $end }]',
          '',
        ].join('\n'),
      );
      const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' };
      const submitter = workerMachine(root, 'submitter', database.url);
      const far = workerMachine(root, 'far', database.url);
      const enqueued = await runCli(
        ['--config', submitter.config, 'workflow', 'run', join(root, 'relay.yaml'), '--enqueue'],
        { cwd: submitter.cwd, env: { ...submitter.env, ...traced } },
      );
      expect(enqueued.status, enqueued.stderr).toBe(0);
      const runId = enqueued.stdout.trim();
      const enqueueSpan = receiver.spans.find(
        (span) => span.name === 'workflow relay enqueue' && span.attributes['switchboard.run.id'] === runId,
      );
      expect(enqueueSpan, "the enqueuing process's span").toBeDefined();

      await startWorker(['--config', far.config, 'worker', '--queues', 'workflows'], {
        cwd: far.cwd,
        env: { ...far.env, ...traced },
        children,
      });
      await untilWorkflowStatus(far, runId, (status) => status === 'completed', Date.now() + 60_000);
      const runSpan = () =>
        receiver.spans.find(
          (span) => span.name === 'workflow relay' && span.attributes['switchboard.run.id'] === runId,
        );
      await waitFor(() => runSpan() !== undefined, { what: "the worker's run span" });
      expect(runSpan()).toMatchObject({ traceId: enqueueSpan?.traceId, parentSpanId: enqueueSpan?.spanId });
      expect(childrenOf(runSpan() as ReceivedSpan, receiver.spans).map((span) => span.name)).toEqual([
        'step greet',
        'step shout',
      ]);
    } finally {
      killWorkers(children);
      await database.drop();
    }
  });
});
