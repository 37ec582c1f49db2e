import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFilesScenario } from './helpers/agent-scenarios.js';
import { agentCliSuite, type RunJson } from './helpers/agent-cli.js';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp-receiver.js';
import { runCli } from './helpers/run-cli.js';

// An agent run's trace as a user gets it: the built CLI, real git, the real Claude Code binary against
// `switchboard sim`, and a real OTLP/HTTP receiver on 127.0.0.1.

const { fixture, simUrl } = agentCliSuite();
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('OpenTelemetry traces of agent runs', () => {
  it('`agent run` sends an invoke_agent span with the run, its status and cost', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'hello.txt', content: 'hi\n' }] }));
    const task = f.task('task', { id: 'task-7', title: 'Say hello', verify: 'test -f hello.txt' });
    const result = await runCli(['agent', 'run', '--task', task, '--json', '--base-url', simUrl()], {
      cwd: f.repo,
      env: { ...f.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    });
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    const span = receiver.spans.find((received) => received.name === 'invoke_agent task-7');
    expect(span, receiver.spans.map((received) => received.name).join(', ')).toBeDefined();
    expect(span?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.agent.name': 'task-7',
      'gen_ai.agent.id': run.id,
      'switchboard.agent.status': run.status,
      'switchboard.cost_usd': run.costUsd,
    });
    expect(span?.attributes['error.type']).toBeUndefined();
    const bytes = Buffer.concat(receiver.bodies).toString('utf8');
    expect(bytes).not.toContain('sk-ant-agent-cli-test');
    expect(bytes).not.toContain('sk-proj-agent-cli-secret');
  });
});
