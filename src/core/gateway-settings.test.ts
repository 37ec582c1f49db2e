import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

function load(yaml?: string) {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-gateway-'));
  if (yaml !== undefined) writeFileSync(join(cwd, 'switchboard.yaml'), yaml);
  return loadConfig({ cwd, env: {} });
}

describe('gateway settings', () => {
  it('has defaults without a gateway section', () => {
    expect(load().gateway).toEqual({
      aliases: {},
      routes: {},
      longContextTokens: 60_000,
      betas: { anthropic: 'all', claude: [], gemini: [], openai: [] },
      forwardClientKey: false,
      keepAliveMs: 15_000,
      stallMs: 120_000,
      maxConcurrent: 1024,
    });
  });

  it('reads aliases, routes, the threshold, betas, the client-key switch, the stream timings and the cap', () => {
    const config = load(
      [
        'roles:',
        '  drafter: claude:sonnet,anthropic:claude-sonnet-4-5',
        'gateway:',
        '  aliases:',
        '    opus: anthropic:claude-opus-4-1',
        '    writer: drafter,openai:gpt-4.1',
        '  routes:',
        '    background: haiku',
        '    think: drafter',
        '    long_context: anthropic:claude-sonnet-4-5',
        '    web_search: writer',
        '  long_context_tokens: 100000',
        '  betas:',
        '    anthropic: [context-1m-2025-08-07]',
        '    openai: all',
        '  forward_client_key: true',
        '  keep_alive_seconds: 2.5',
        '  stall_seconds: 30',
        '  max_concurrent: 64',
      ].join('\n'),
    );
    expect(config.gateway).toEqual({
      aliases: { opus: 'anthropic:claude-opus-4-1', writer: 'drafter,openai:gpt-4.1' },
      routes: {
        background: 'haiku',
        think: 'drafter',
        long_context: 'anthropic:claude-sonnet-4-5',
        web_search: 'writer',
      },
      longContextTokens: 100_000,
      betas: { anthropic: ['context-1m-2025-08-07'], claude: [], gemini: [], openai: 'all' },
      forwardClientKey: true,
      keepAliveMs: 2_500,
      stallMs: 30_000,
      maxConcurrent: 64,
    });
  });

  it('refuses a name that is both a role and an alias, naming both', () => {
    expect(() =>
      load('roles:\n  fast: claude:haiku\ngateway:\n  aliases:\n    fast: anthropic:claude-haiku-4-5\n'),
    ).toThrow(/"fast" is both a role \(roles\.fast\) and an alias \(gateway\.aliases\.fast\)/);
    expect(() => load('gateway:\n  aliases:\n    "a:b": anthropic:x\n')).toThrow(
      /at "gateway\.aliases\.a:b": alias names are letters/,
    );
  });

  it('refuses a route to nothing it knows, and an alias with an unknown provider or role', () => {
    expect(() => load('gateway:\n  routes:\n    think: sonet\n')).toThrow(
      /at "gateway\.routes\.think": "sonet" is neither a role, an alias nor a provider spec/,
    );
    expect(() => load('gateway:\n  routes:\n    think: antropic:claude-sonnet-4-5\n')).toThrow(
      /at "gateway\.routes\.think": unknown provider "antropic"/,
    );
    expect(() => load('gateway:\n  aliases:\n    big: anthropic:x,reviewer\n')).toThrow(
      /at "gateway\.aliases\.big": "reviewer" is neither a provider spec nor a role/,
    );
  });

  it('refuses unknown keys and classes, and a threshold that is not a positive integer', () => {
    expect(() => load('gateway:\n  alias:\n    a: anthropic:x\n')).toThrow(/at "gateway": .*alias/i);
    expect(() => load('gateway:\n  routes:\n    default: haiku\n')).toThrow(/at "gateway\.routes"/);
    expect(() => load('gateway:\n  long_context_tokens: 0\n')).toThrow(/gateway\.long_context_tokens/);
    expect(() => load('gateway:\n  betas:\n    anthropic: none\n')).toThrow(/gateway\.betas\.anthropic/);
    expect(() => load('gateway:\n  keep_alive_seconds: 0\n')).toThrow(/gateway\.keep_alive_seconds/);
    expect(() => load('gateway:\n  stall_seconds: "2m"\n')).toThrow(/gateway\.stall_seconds/);
    expect(() => load('gateway:\n  max_concurrent: 0\n')).toThrow(/gateway\.max_concurrent/);
    expect(() => load('gateway:\n  max_concurrent: 1.5\n')).toThrow(/gateway\.max_concurrent/);
  });
});
