import { describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import type { InputDefinition } from './model.js';
import { resolveInputs } from './inputs.js';

const definition = {
  file: 'flow.yaml',
  input: {
    issue: { type: 'number', required: true },
    title: { type: 'string', required: true },
    draft: { type: 'boolean', required: false },
    labels: { type: 'array', required: false },
    extra: { type: 'object', required: false, default: { depth: 1 } },
    note: { type: 'string', required: false },
  } satisfies Record<string, InputDefinition>,
};

function failure(given: Record<string, unknown>): { message: string; hint: string | undefined } {
  try {
    resolveInputs(definition, given);
  } catch (error) {
    if (isSwitchboardError(error)) return { message: error.message, hint: error.hint };
    throw error;
  }
  throw new Error('expected an error');
}

describe('resolveInputs', () => {
  it('coerces -i strings to the declared types and fills defaults and Conductor zero values', () => {
    expect(
      resolveInputs(definition, { issue: '12', title: 'Fix it', draft: 'yes', labels: '["bug","ui"]' }),
    ).toEqual({
      issue: 12,
      title: 'Fix it',
      draft: true,
      labels: ['bug', 'ui'],
      extra: { depth: 1 },
      note: '',
    });
  });

  it('takes typed values from the library as they are', () => {
    const resolved = resolveInputs(definition, { issue: 7, title: 3, extra: { depth: 2 }, labels: [] });
    expect(resolved).toMatchObject({ issue: 7, title: '3', extra: { depth: 2 }, labels: [], draft: false });
  });

  it('passes inputs the file does not declare through, read as Conductor reads -i text', () => {
    const resolved = resolveInputs(definition, {
      issue: '1',
      title: 'x',
      topic: 'error handling',
      count: '3',
      strict: 'true',
      tags: '["a"]',
    });
    expect(resolved).toMatchObject({ topic: 'error handling', count: 3, strict: true, tags: ['a'] });
  });

  it('gives each run its own copy of a default', () => {
    const first = resolveInputs(definition, { issue: 1, title: 'a' });
    (first['extra'] as { depth: number }).depth = 9;
    expect(resolveInputs(definition, { issue: 1, title: 'a' })['extra']).toEqual({ depth: 1 });
  });

  it.each([
    [{ title: 'x' }, 'input "issue" is required', 'pass -i issue=NUMBER'],
    [
      { issue: 'twelve', title: 'x' },
      'input "issue" must be a number: "twelve" is not a number',
      'pass -i issue=NUMBER',
    ],
    [
      { issue: '1', title: 'x', draft: 'maybe' },
      'input "draft" must be true or false: "maybe" is not true or false',
      'pass -i draft=true',
    ],
    [
      { issue: '1', title: 'x', labels: '{"a":1}' },
      'input "labels" must be a JSON list: the JSON is an object',
      "pass -i labels='[...]'",
    ],
    [
      { issue: '1', title: 'x', extra: '{oops' },
      'input "extra" must be a JSON object: the value is not valid JSON',
      "pass -i extra='{...}'",
    ],
  ])('refuses %j in one line', (given, message, hint) => {
    expect(failure(given)).toEqual({ message, hint });
  });
});
