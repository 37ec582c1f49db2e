import { describe, expect, it } from 'vitest';
import { modelScope, type ScopeTarget } from './model-scope.js';

// A key's --models as the targets a request may reach. The names here stand for what a gateway's
// config makes of them: `haiku` a built-in alias, `fast` a role.

const NAMES: Record<string, ScopeTarget[]> = {
  haiku: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }],
  fast: [
    { provider: 'openai', model: 'llama3.2', baseUrl: 'http://127.0.0.1:11434/v1' },
    { provider: 'anthropic', model: 'claude-haiku-4-5' },
  ],
};
const resolve = (entry: string) => NAMES[entry];
const anthropic = (model: string): ScopeTarget => ({ provider: 'anthropic', model });

describe('modelScope', () => {
  it('a name stands for the targets it resolves to and their dated snapshots, nothing that only shares a word', () => {
    const scope = modelScope(['haiku'], resolve);
    expect(scope.allows(anthropic('claude-haiku-4-5'))).toBe(true);
    expect(scope.allows(anthropic('CLAUDE-HAIKU-4-5-20251001'))).toBe(true);
    expect(scope.allows(anthropic('claude-3-haiku-20240307'))).toBe(false);
    expect(scope.allows(anthropic('claude-haiku-4-5-turbo'))).toBe(false);
    expect(scope.allows({ provider: 'openai', model: 'claude-haiku-4-5' })).toBe(false);
    expect(scope.allows(anthropic('claude-opus-4-1'))).toBe(false);
  });

  it('a target is in scope on its own endpoint only', () => {
    const scope = modelScope(['fast'], resolve);
    expect(
      scope.allows({ provider: 'openai', model: 'llama3.2', baseUrl: 'http://127.0.0.1:11434/v1' }),
    ).toBe(true);
    expect(scope.allows({ provider: 'openai', model: 'llama3.2' })).toBe(false);
  });

  it('any other entry is an id prefix, or one word a part of the id', () => {
    const scope = modelScope(['claude-sonnet-4-5', 'llama'], resolve);
    expect(scope.allows(anthropic('claude-sonnet-4-5-20250929'))).toBe(true);
    expect(scope.allows({ provider: 'openai', model: 'meta-llama-3-70b' })).toBe(true);
    expect(scope.allows(anthropic('claude-sonnet-4-6'))).toBe(false);
    // The id at another address (an inline base URL) is another model as far as the key goes.
    expect(scope.allows({ ...anthropic('claude-sonnet-4-5'), baseUrl: 'http://127.0.0.1:9' })).toBe(false);
  });

  it('outside names the first target of a chain out of scope', () => {
    const scope = modelScope(['haiku'], resolve);
    const opus = anthropic('claude-opus-4-1');
    expect(scope.outside([opus, anthropic('claude-haiku-4-5')])).toBe(opus);
    expect(scope.outside([anthropic('claude-haiku-4-5')])).toBeUndefined();
  });

  it('no models allows everything, an empty list nothing', () => {
    expect(modelScope(undefined, resolve).allows(anthropic('anything'))).toBe(true);
    expect(modelScope([], resolve).allows(anthropic('claude-haiku-4-5'))).toBe(false);
  });
});
