import { describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import { agentRuntimeNotices, nativeModelName, resolveStepSpec } from './providers.js';

describe('resolveStepSpec', () => {
  it.each([
    [
      'claude → the Anthropic API, Conductor model names → Anthropic ids',
      { provider: 'claude', model: 'claude-haiku-4.5' },
      'anthropic:claude-haiku-4-5',
    ],
    [
      'claude-agent-sdk → Claude Code',
      { provider: 'claude-agent-sdk', model: 'claude-sonnet-4.5' },
      'claude:claude-sonnet-4-5',
    ],
    ['openai keeps its model names', { provider: 'openai', model: 'gpt-4.1-mini' }, 'openai:gpt-4.1-mini'],
    ['gemini', { provider: 'gemini', model: 'gemini-2.5-pro' }, 'gemini:gemini-2.5-pro'],
    [
      'the runtime provider and default model apply when the step names none',
      { runtime: { provider: 'claude', defaultModel: 'claude-opus-4.6-1m' } },
      'anthropic:claude-opus-4-6',
    ],
    [
      'the step overrides the runtime',
      { provider: 'openai', model: 'gpt-4o', runtime: { provider: 'claude', defaultModel: 'x' } },
      'openai:gpt-4o',
    ],
    ['a provider without a model gets its default', { provider: 'claude-agent-sdk' }, 'claude:sonnet'],
    [
      'a model that is already a spec is used as is',
      { provider: 'copilot', model: 'claude:haiku' },
      'claude:haiku',
    ],
    [
      'a chain is used as is',
      { model: 'claude:sonnet,anthropic:claude-sonnet-4-5' },
      'claude:sonnet,anthropic:claude-sonnet-4-5',
    ],
    [
      'a role from switchboard.yaml stands for its chain',
      { provider: 'copilot', model: 'drafter', roles: { drafter: 'claude:sonnet,gemini:2.5-pro' } },
      'claude:sonnet,gemini:2.5-pro',
    ],
    [
      'the provider map turns copilot into a full spec',
      { provider: 'copilot', model: 'gpt-5.2', providerMap: { copilot: 'claude:sonnet' } },
      'claude:sonnet',
    ],
    [
      'a map to a provider keeps the step model',
      { provider: 'copilot', model: 'claude-haiku-4.5', providerMap: { copilot: 'anthropic' } },
      'anthropic:claude-haiku-4-5',
    ],
    [
      'a map to a local endpoint keeps the step model',
      {
        provider: 'copilot',
        model: 'llama3.1',
        providerMap: { copilot: 'openai@http://127.0.0.1:11434/v1' },
      },
      'openai@http://127.0.0.1:11434/v1:llama3.1',
    ],
    [
      'a map to an endpoint with a model uses it',
      { model: 'gpt-5.2', providerMap: { copilot: 'openai@http://127.0.0.1:11434/v1:qwen3' } },
      'openai@http://127.0.0.1:11434/v1:qwen3',
    ],
    [
      'the map may remap a native name',
      { provider: 'claude', model: 'claude-haiku-4.5', providerMap: { claude: 'claude' } },
      'claude:claude-haiku-4-5',
    ],
    [
      'hermes model names lose their vendor prefix for Anthropic',
      { provider: 'hermes', model: 'anthropic/claude-sonnet-4', providerMap: { hermes: 'anthropic' } },
      'anthropic:claude-sonnet-4',
    ],
    [
      '--provider covers a provider nothing maps',
      { provider: 'copilot', model: 'gpt-5.2', override: 'gemini:2.5-flash' },
      'gemini:2.5-flash',
    ],
    [
      '--provider as a provider keeps the model',
      { provider: 'aca', model: 'claude-sonnet-4.6', override: 'claude' },
      'claude:claude-sonnet-4-6',
    ],
  ])('%s', (_name, request, expected) => {
    expect(resolveStepSpec(request)).toBe(expected);
  });

  it('refuses a provider nothing maps, naming the step and the fix', () => {
    let caught: unknown;
    try {
      resolveStepSpec({ provider: 'acme', model: 'gpt-5.2', step: 'planner', file: 'flow.yaml' });
    } catch (error) {
      caught = error;
    }
    expect(isSwitchboardError(caught)).toBe(true);
    const error = caught as { code: string; message: string; hint: string };
    expect(error.code).toBe('WORKFLOW_INVALID');
    expect(error.message).toBe('flow.yaml: step "planner": provider "acme" has no Switchboard equivalent');
    expect(error.hint).toContain('--provider-map acme=claude:sonnet');
  });

  it("runs Conductor's default provider, copilot, and its other agent runtimes on Claude Code unless something maps them", () => {
    expect(resolveStepSpec({ provider: 'hermes', model: 'gpt-4.1' })).toBe('claude:sonnet');
    expect(resolveStepSpec({ provider: 'aca', model: 'claude-opus-4.8' })).toBe('claude:claude-opus-4-8');
    // Claude models keep their name; others become Claude Code's sonnet (it runs Claude models only).
    expect(resolveStepSpec({ model: 'claude-haiku-4.5' })).toBe('claude:claude-haiku-4-5');
    expect(resolveStepSpec({ provider: 'copilot', model: 'claude-opus-4.6-1m' })).toBe(
      'claude:claude-opus-4-6',
    );
    expect(resolveStepSpec({ model: 'gpt-5.2' })).toBe('claude:sonnet');
    expect(resolveStepSpec({})).toBe('claude:sonnet');
    expect(resolveStepSpec({ model: 'gpt-5.2', providerMap: { copilot: 'openai' } })).toBe('openai:gpt-5.2');
  });

  it('names the steps of each agent runtime that run on Claude Code in one line, and says how to choose otherwise', () => {
    const steps = [
      { model: 'claude-haiku-4.5' },
      { provider: 'copilot', model: 'gpt-5.2' },
      { model: 'gpt-5.2' },
      { provider: 'hermes', model: 'anthropic/claude-sonnet-4' },
    ];
    expect(agentRuntimeNotices(steps, {})).toEqual([
      'provider copilot runs on Claude Code: claude-haiku-4.5 → claude:claude-haiku-4-5, gpt-5.2 → claude:sonnet (Claude Code runs Claude models only: others get sonnet); choose another with --provider-map copilot=SPEC or workflows.provider_map in switchboard.yaml',
      'provider hermes runs on Claude Code: anthropic/claude-sonnet-4 → claude:claude-sonnet-4; choose another with --provider-map hermes=SPEC or workflows.provider_map in switchboard.yaml',
    ]);
    expect(agentRuntimeNotices(steps, { providerMap: { copilot: 'anthropic' } })).toEqual([
      expect.stringMatching(/^provider hermes /),
    ]);
    expect(agentRuntimeNotices(steps, { override: 'gemini:2.5-flash' })).toEqual([]);
    expect(
      agentRuntimeNotices([{ provider: 'claude', model: 'claude-haiku-4.5' }, { model: 'claude:haiku' }], {}),
    ).toEqual([]);
    expect(agentRuntimeNotices([{}], { runtime: { provider: 'openai', defaultModel: 'gpt-4.1' } })).toEqual(
      [],
    );
  });

  it('refuses OpenAI without a model and a map value that is no spec', () => {
    expect(() => resolveStepSpec({ provider: 'openai', step: 's' })).toThrow(/step "s": no model for openai/);
    expect(() =>
      resolveStepSpec({ provider: 'copilot', model: 'x', providerMap: { copilot: 'bogus' } }),
    ).toThrow(/copilot=bogus is neither a spec, a role nor a provider/);
  });
});

describe('nativeModelName', () => {
  it('turns Copilot-style Claude names into Anthropic ids and leaves others alone', () => {
    expect(nativeModelName('anthropic', 'claude-sonnet-4.5')).toBe('claude-sonnet-4-5');
    expect(nativeModelName('claude', 'claude-haiku-4-5@20251001')).toBe('claude-haiku-4-5@20251001');
    expect(nativeModelName('openai', 'gpt-5.2')).toBe('gpt-5.2');
    expect(nativeModelName('openai', 'anthropic/claude-sonnet-4')).toBe('anthropic/claude-sonnet-4');
    expect(nativeModelName('gemini', 'google/gemini-2.5-pro')).toBe('gemini-2.5-pro');
  });
});
