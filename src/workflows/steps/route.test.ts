import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../../providers/registry.js';
import { startSimulator } from '../../sim/server.js';
import type { AgentStep, RouteStep } from '../model.js';
import { testStepContext } from '../../../test/helpers/step-context.js';
import { executeRouteStep } from './route.js';

// `type: route` with the real router over the test skills (rules, then the local model), the skills
// folder given relative to the workflow file as a user writes it.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function workflowFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-route-step-'));
  temporary.push(dir);
  cpSync(join(import.meta.dirname, '../../../test/fixtures/skills'), join(dir, 'skills'), {
    recursive: true,
  });
  return dir;
}

function routeStep(fields: Partial<RouteStep> = {}): RouteStep {
  return {
    type: 'route',
    name: 'triage',
    routes: [],
    input: [],
    skills: 'skills',
    text: '{{ workflow.input.request }}',
    ...fields,
  };
}

const brief = (name: string): AgentStep => ({ type: 'agent', name, routes: [], input: [], prompt: 'work' });

function run(step: RouteStep, request: string, steps: string[] = []) {
  const dir = workflowFolder();
  const context = testStepContext({
    step,
    dir,
    stateDir: join(dir, '.switchboard'),
    scope: { workflow: { input: { request } } },
  });
  for (const name of steps) context.workflow.steps.set(name, brief(name));
  return executeRouteStep(context);
}

describe('type: route', () => {
  it('routes the rendered text and goes on to the step named like the chosen skill', async () => {
    const outcome = await run(routeStep(), 'here is the stack trace from prod', ['fix-bug', 'write-docs']);
    expect(outcome).toMatchObject({
      status: 'completed',
      output: { skill: 'fix-bug', method: 'rules' },
      next: 'fix-bug',
      costUsd: 0,
    });
    const output = outcome.output as { confidence: number; reasoning: string };
    expect(output.confidence).toBeGreaterThan(0);
    expect(typeof output.reasoning).toBe('string');
  });

  it('ends the run when the router abstains or no step has the skill’s name', async () => {
    expect(await run(routeStep(), 'order a large pepperoni pizza for dinner', ['fix-bug'])).toMatchObject({
      output: { skill: 'none' },
      next: '$end',
    });
    expect(await run(routeStep(), 'here is the stack trace from prod', ['write-docs'])).toMatchObject({
      output: { skill: 'fix-bug' },
      next: '$end',
    });
  });

  it("leaves the choice to the step's own routes when it has them", async () => {
    const step = routeStep({ routes: [{ to: 'write-docs', when: "output.skill == 'fix-bug'" }] });
    const outcome = await run(step, 'here is the stack trace from prod', ['fix-bug', 'write-docs']);
    expect(outcome.status).toBe('completed');
    expect(outcome.next).toBeUndefined();
  });

  it('names the step and the field when mode is not a route mode', async () => {
    await expect(run(routeStep({ mode: 'psychic' }), 'anything')).rejects.toMatchObject({
      code: 'WORKFLOW_INVALID',
      message: expect.stringMatching(/step "triage" field "mode": "psychic" is not a route mode/),
    });
  });

  it('llm-only: the routing call goes through the run’s call(), so the run’s budget, tags and cost cover it', async () => {
    const sim = await startSimulator({
      maxLifetimeMs: 60_000,
      scenario: {
        rules: [
          {
            match: { provider: 'anthropic' },
            reply: {
              tool: {
                name: 'emit_output',
                input: { skill: 'write-docs', confidence: 0.9, reasoning: 'asks for a guide' },
              },
            },
          },
        ],
      },
    });
    const providers = new ProviderRegistry({ anthropic: { apiKey: 'sk-ant-route-step', baseUrl: sim.url } });
    try {
      const dir = workflowFolder();
      const context = testStepContext({
        step: routeStep({ mode: 'llm-only' }),
        dir,
        stateDir: join(dir, '.switchboard'),
        scope: { workflow: { input: { request: 'the gizmo needs a how-to' } } },
        registry: providers,
        runtime: { provider: 'claude', defaultModel: 'claude-haiku-4.5' },
      });
      const outcome = await executeRouteStep(context);
      expect(outcome).toMatchObject({ status: 'completed', output: { skill: 'write-docs', method: 'llm' } });
      expect(context.specs).toEqual(['anthropic:claude-haiku-4-5']);
      expect(outcome.costUsd).toBeGreaterThan(0);
    } finally {
      await providers.close();
      await sim.close();
    }
  });
});
