import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { listGatewayModels, resolveGatewayModel } from './models.js';

function load(yaml = '') {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-gateway-models-'));
  writeFileSync(join(cwd, 'switchboard.yaml'), yaml);
  return loadConfig({ cwd, env: {} });
}

const config = load(
  [
    'roles:',
    '  drafter: claude:sonnet,anthropic:claude-sonnet-4-5',
    '  local: openai@http://127.0.0.1:11434/v1:llama3.2',
    '  sonnet: anthropic:claude-sonnet-4-5', // a role beats the built-in alias
    'gateway:',
    '  aliases:',
    '    opus: anthropic:claude-opus-4-1', // an alias beats the built-in one
    '    writer: drafter,openai:gpt-4.1',
    '    gpt-4o: openai:gpt-4.1', // an alias may take a real model's name
  ].join('\n'),
);

describe('resolveGatewayModel', () => {
  it('resolves a role to its chain', () => {
    expect(resolveGatewayModel('drafter', 'anthropic', config)).toEqual({
      source: 'role',
      name: 'drafter',
      chain: [
        { provider: 'claude', model: 'sonnet', spec: 'claude:sonnet' },
        { provider: 'anthropic', model: 'claude-sonnet-4-5', spec: 'anthropic:claude-sonnet-4-5' },
      ],
    });
    expect(resolveGatewayModel('local', 'chat', config).chain).toEqual([
      {
        provider: 'openai',
        model: 'llama3.2',
        spec: 'openai@http://127.0.0.1:11434/v1:llama3.2',
        baseUrl: 'http://127.0.0.1:11434/v1',
      },
    ]);
  });

  it('puts roles before aliases before built-in aliases, and aliases before real model names', () => {
    expect(resolveGatewayModel('sonnet', 'anthropic', config)).toMatchObject({
      source: 'role',
      chain: [{ spec: 'anthropic:claude-sonnet-4-5' }],
    });
    expect(resolveGatewayModel('opus', 'anthropic', config)).toMatchObject({
      source: 'alias',
      chain: [{ spec: 'anthropic:claude-opus-4-1' }],
    });
    expect(resolveGatewayModel('haiku', 'chat', config)).toEqual({
      source: 'alias',
      name: 'haiku',
      chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5', spec: 'anthropic:claude-haiku-4-5' }],
    });
    expect(resolveGatewayModel('gpt-4o', 'chat', config)).toMatchObject({
      source: 'alias',
      chain: [{ spec: 'openai:gpt-4.1' }],
    });
    const noConfig = load();
    expect(resolveGatewayModel('sonnet', 'anthropic', noConfig).chain).toEqual([
      { provider: 'anthropic', model: 'claude-sonnet-4-6', spec: 'anthropic:claude-sonnet-4-6' },
    ]);
    expect(resolveGatewayModel('opus', 'anthropic', noConfig).chain[0]?.spec).toBe(
      'anthropic:claude-opus-4-5',
    );
  });

  it('expands a role inside an alias or a chain, one level deep', () => {
    expect(resolveGatewayModel('writer', 'anthropic', config).chain.map(({ spec }) => spec)).toEqual([
      'claude:sonnet',
      'anthropic:claude-sonnet-4-5',
      'openai:gpt-4.1',
    ]);
    expect(resolveGatewayModel(' gemini:2.5-pro,local ', 'chat', config)).toMatchObject({
      source: 'spec',
      name: 'gemini:2.5-pro,local',
      chain: [{ spec: 'gemini:2.5-pro' }, { spec: 'openai@http://127.0.0.1:11434/v1:llama3.2' }],
    });
    const nested = load('roles:\n  a: claude:haiku\n  b: a\n');
    expect(() => resolveGatewayModel('b', 'anthropic', nested)).toThrow(/role "b" names another role/);
  });

  it('sends a real model name to its vendor, and an unknown one to the wire the client speaks', () => {
    const vendor = (model: string, wire: 'anthropic' | 'chat' | 'responses') =>
      resolveGatewayModel(model, wire, config).chain.map(({ spec }) => spec);
    expect(vendor('claude-sonnet-4-5-20250929', 'chat')).toEqual(['anthropic:claude-sonnet-4-5-20250929']);
    for (const model of [
      'gpt-4.1-mini',
      'o1',
      'o3-mini',
      'o4-mini',
      'chatgpt-4o-latest',
      'text-embedding-3-small',
    ]) {
      expect(vendor(model, 'anthropic')).toEqual([`openai:${model}`]);
    }
    expect(vendor('gemini-2.5-flash', 'anthropic')).toEqual(['gemini:gemini-2.5-flash']);
    expect(vendor('llama3.2', 'chat')).toEqual(['openai:llama3.2']);
    expect(vendor('llama3.2', 'responses')).toEqual(['openai:llama3.2']);
    expect(vendor('some-proxy-model', 'anthropic')).toEqual(['anthropic:some-proxy-model']);
    expect(resolveGatewayModel('llama3.2', 'chat', config)).toMatchObject({
      source: 'model',
      name: 'llama3.2',
    });
  });

  it('refuses an empty name, an unknown provider, an unknown role in a chain and a name with spaces', () => {
    const refused = (model: string) => {
      try {
        resolveGatewayModel(model, 'anthropic', config);
      } catch (error) {
        return error;
      }
      throw new Error(`${model} was accepted`);
    };
    expect(refused('  ')).toMatchObject({ code: 'INVALID_INPUT', message: 'the request names no model' });
    expect(refused('bedrock:claude-sonnet-4-5')).toMatchObject({
      code: 'INVALID_INPUT',
      message: 'unknown provider "bedrock" in "bedrock:claude-sonnet-4-5"',
      hint: expect.stringContaining('claude, anthropic, gemini, openai'),
    });
    expect(refused('anthropic:claude-sonnet-4-5,reviewer')).toMatchObject({
      code: 'INVALID_INPUT',
      message: '"reviewer" is neither a provider spec nor a role',
      hint: expect.stringContaining('drafter'),
    });
    expect(refused('claude sonnet')).toMatchObject({ code: 'INVALID_INPUT' });
    // A name shaped like an Object method is not a role unless one is defined.
    expect(refused('anthropic:x,constructor')).toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('listGatewayModels', () => {
  it('lists the roles and aliases a key may use, and the Claude models they name, sorted and once, in the Anthropic shape', () => {
    // `local` is the one name whose chain reaches an endpoint of its own.
    const body = listGatewayModels(
      config,
      (chain) => chain.every((target) => target.baseUrl === undefined),
      'anthropic',
    );
    const ids = [
      'claude-haiku-4-5',
      'claude-opus-4-1',
      'claude-sonnet-4-5',
      'drafter',
      'gpt-4o',
      'haiku',
      'opus',
      'sonnet',
      'writer',
    ];
    expect(body).toEqual({
      data: ids.map((id) => ({
        type: 'model',
        id,
        display_name: id,
        created_at: '1970-01-01T00:00:00.000Z',
      })),
      has_more: false,
      first_id: 'claude-haiku-4-5',
      last_id: 'writer',
    });
  });

  it('answers in the OpenAI shape, and with an empty list when a key may use nothing', () => {
    expect(listGatewayModels(load(), () => true, 'openai')).toEqual({
      object: 'list',
      data: ['haiku', 'opus', 'sonnet'].map((id) => ({
        id,
        object: 'model',
        created: 0,
        owned_by: 'switchboard',
      })),
    });
    expect(listGatewayModels(config, () => false, 'anthropic')).toEqual({
      data: [],
      has_more: false,
      first_id: null,
      last_id: null,
    });
  });
});
