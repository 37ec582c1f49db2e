import { describe, expect, it } from 'vitest';
import type { GatewaySettings } from '../../core/gateway-settings.js';
import { classifyRequest, estimateInputTokens, routeRequest } from './claude-code-routing.js';

const settings: GatewaySettings = {
  aliases: {},
  routes: {
    background: 'haiku',
    think: 'sonnet',
    long_context: 'anthropic:claude-sonnet-4-5',
    web_search: 'anthropic:claude-sonnet-4-5',
    subagent: 'haiku',
  },
  longContextTokens: 60_000,
  betas: { anthropic: 'all', claude: [], gemini: [], openai: [] },
  forwardClientKey: false,
  keepAliveMs: 15_000,
  stallMs: 120_000,
  maxConcurrent: 1024,
};

const claudeCodeSystem = [
  { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
  { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.' },
];

// Shaped as Claude Code 2.x sends them (POST /v1/messages?beta=true).
const titleRequest = {
  model: 'claude-haiku-4-5-20251001',
  max_tokens: 512,
  messages: [{ role: 'user', content: [{ type: 'text', text: 'fix the flaky test in src/store' }] }],
  system: [
    claudeCodeSystem[0],
    { type: 'text', text: 'Summarize this coding conversation in under 50 characters.' },
  ],
  temperature: 0,
  metadata: { user_id: 'user_abc_account__session_123' },
  stream: true,
};

const bashTool = {
  name: 'Bash',
  description: 'Executes a given bash command in a persistent shell session.',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string', description: 'The command to execute' } },
    required: ['command'],
    additionalProperties: false,
    $schema: 'http://json-schema.org/draft-07/schema#',
  },
};

const mainRequest = {
  model: 'claude-sonnet-4-5-20250929',
  max_tokens: 32_000,
  thinking: { type: 'enabled', budget_tokens: 31_999 },
  messages: [
    {
      role: 'user',
      content: [{ type: 'text', text: 'why does CI fail?', cache_control: { type: 'ephemeral' } }],
    },
  ],
  system: claudeCodeSystem.map((block) => ({ ...block, cache_control: { type: 'ephemeral' } })),
  tools: [bashTool],
  metadata: { user_id: 'user_abc_account__session_123' },
  stream: true,
};

const webSearchRequest = {
  ...mainRequest,
  thinking: undefined,
  tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 8 }],
};

describe('classifyRequest', () => {
  it('takes a Haiku title request as background', () => {
    expect(classifyRequest(titleRequest, settings)).toEqual({
      requestClass: 'background',
      reason: 'claude-haiku-4-5-20251001 is a Haiku model',
    });
  });

  it('takes a main request with thinking and tools as think, and disabled thinking as default', () => {
    expect(classifyRequest(mainRequest, settings)).toEqual({
      requestClass: 'think',
      reason: 'thinking is set',
    });
    expect(classifyRequest({ ...mainRequest, thinking: { type: 'disabled' } }, settings).requestClass).toBe(
      'default',
    );
  });

  it('takes the web search server tool as web_search', () => {
    expect(classifyRequest(webSearchRequest, settings)).toEqual({
      requestClass: 'web_search',
      reason: 'the request has a web_search_20250305 tool',
    });
  });

  it('takes a system prompt with a subagent tag as subagent, naming the tag', () => {
    const system = [
      ...claudeCodeSystem,
      { type: 'text', text: '<CCR-SUBAGENT-MODEL> drafter </CCR-SUBAGENT-MODEL>' },
    ];
    expect(classifyRequest({ ...mainRequest, system }, settings)).toEqual({
      requestClass: 'subagent',
      reason: "the system prompt's subagent tag names drafter",
      subagentModel: 'drafter',
    });
    const string = 'Agent.\n<CCR-SUBAGENT-MODEL>anthropic:claude-haiku-4-5</CCR-SUBAGENT-MODEL>';
    expect(classifyRequest({ ...mainRequest, system: string }, settings).subagentModel).toBe(
      'anthropic:claude-haiku-4-5',
    );
    expect(
      classifyRequest({ ...mainRequest, system: '<CCR-SUBAGENT-MODEL>unclosed' }, settings).requestClass,
    ).toBe('think');
  });

  it('takes a request estimated over the threshold as long_context', () => {
    const long = { ...mainRequest, messages: [{ role: 'user', content: 'x'.repeat(284_800) }] };
    const { requestClass, reason } = classifyRequest(long, settings);
    expect(requestClass).toBe('long_context');
    expect(reason).toMatch(/^estimated 7\d,\d{3} input tokens > 60,000$/);
  });

  it("follows claude-code-router's order, skipping classes that have no route", () => {
    const everything = {
      ...webSearchRequest,
      model: 'claude-3-5-haiku-20241022',
      thinking: { type: 'enabled', budget_tokens: 1024 },
      system: '<CCR-SUBAGENT-MODEL>drafter</CCR-SUBAGENT-MODEL>',
      messages: [{ role: 'user', content: 'x'.repeat(400_000) }],
    };
    const order: string[] = [];
    const routes = { ...settings.routes };
    for (;;) {
      const { requestClass } = classifyRequest(everything, { ...settings, routes });
      order.push(requestClass);
      if (requestClass === 'default') break;
      if (requestClass === 'subagent') everything.system = 'no tag';
      else delete routes[requestClass];
    }
    expect(order).toEqual(['long_context', 'subagent', 'background', 'think', 'web_search', 'default']);
    expect(classifyRequest(everything, { ...settings, routes: {} })).toEqual({
      requestClass: 'default',
      reason: 'no class is routed',
    });
  });
});

describe('routeRequest', () => {
  it("applies the class's route, and keeps the requested model for a class not routed", () => {
    expect(routeRequest('claude-haiku-4-5-20251001', titleRequest, settings)).toEqual({
      model: 'haiku',
      requestClass: 'background',
      reason: 'claude-haiku-4-5-20251001 is a Haiku model',
      rerouted: true,
    });
    const thinkOnly = { ...settings, routes: { web_search: 'sonnet' } };
    expect(routeRequest('claude-sonnet-4-5-20250929', mainRequest, thinkOnly)).toEqual({
      model: 'claude-sonnet-4-5-20250929',
      requestClass: 'default',
      reason: 'no routed class applies (web_search)',
      rerouted: false,
    });
    // A route naming the requested model is no reroute.
    const same = { ...settings, routes: { think: 'claude-sonnet-4-5-20250929' } };
    expect(routeRequest('claude-sonnet-4-5-20250929', mainRequest, same)).toMatchObject({
      requestClass: 'think',
      rerouted: false,
    });
  });

  it("sends a subagent to its tag's model, or to routes.subagent when the tag is empty", () => {
    const tagged = { ...mainRequest, system: '<CCR-SUBAGENT-MODEL>drafter</CCR-SUBAGENT-MODEL>' };
    expect(routeRequest('claude-sonnet-4-5', tagged, settings)).toMatchObject({
      model: 'drafter',
      rerouted: true,
    });
    const empty = { ...mainRequest, system: '<CCR-SUBAGENT-MODEL></CCR-SUBAGENT-MODEL>' };
    expect(routeRequest('claude-sonnet-4-5', empty, settings)).toMatchObject({
      model: 'haiku',
      requestClass: 'subagent',
    });
  });

  it('reads the requested model for background, not the body', () => {
    expect(routeRequest('claude-haiku-4-5', { ...mainRequest, thinking: undefined }, settings)).toMatchObject(
      {
        requestClass: 'background',
        model: 'haiku',
      },
    );
  });
});

describe('estimateInputTokens', () => {
  it('is a quarter of the JSON length of system, messages and tools', () => {
    const body = {
      system: 'abcd',
      messages: [{ role: 'user', content: 'hello' }],
      tools: [bashTool],
      model: 'x',
    };
    const json = JSON.stringify([body.system, body.messages, body.tools]).length;
    expect(estimateInputTokens(body)).toBe(Math.ceil(json / 4));
  });

  it('estimates a 1 MB body quickly, and leaves base64 media out', () => {
    const text = 'lorem ipsum dolor sit amet '.repeat(40_000); // ~1.08 MB
    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(1_000_000) },
    };
    const body = { ...mainRequest, messages: [{ role: 'user', content: [{ type: 'text', text }, image] }] };
    const started = performance.now();
    const tokens = estimateInputTokens(body);
    expect(performance.now() - started).toBeLessThan(500);
    expect(tokens).toBeGreaterThan(text.length / 4);
    expect(tokens).toBeLessThan(text.length / 4 + 1_000);
  });

  it('ends on a cyclic value (built by a program, not parsed)', () => {
    const messages: unknown[] = [{ role: 'user', content: 'hi' }];
    messages.push(messages);
    expect(estimateInputTokens({ messages })).toBeGreaterThan(0);
  });
});
