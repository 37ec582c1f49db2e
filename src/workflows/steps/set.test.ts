import { describe, expect, it } from 'vitest';
import { coerceValue, executeSetStep } from './set.js';
import { simpleStepContext, type SimpleContextOptions } from '../../../test/helpers/step-context.js';
import type { OutputField, SetStep } from '../model.js';

function set(fields: Partial<SetStep>): SetStep {
  return { name: 'bind', type: 'set', outputType: 'auto', routes: [], input: [], ...fields };
}

async function run(step: SetStep, options: SimpleContextOptions = {}) {
  return executeSetStep(simpleStepContext(step, options).context);
}

function field(type: OutputField['type']): OutputField {
  return { type, required: true, nullable: false };
}

describe('set steps', () => {
  it('binds one rendered value, typed by a YAML safe-load', async () => {
    const outcome = await run(set({ value: '{{ workflow.input.org }}/{{ workflow.input.repo }}' }), {
      input: { org: 'acme', repo: 'widgets' },
    });
    expect(outcome).toMatchObject({ status: 'completed', output: 'acme/widgets', costUsd: 0 });
    expect((await run(set({ value: '{{ 40 + 2 }}' }))).output).toBe(42);
    expect((await run(set({ value: '[a, b]' }))).output).toEqual(['a', 'b']);
    expect((await run(set({ value: '{"a": 1}' }))).output).toEqual({ a: 1 });
  });

  it('binds values: as a dict, each rendered against the context before the step', async () => {
    const outcome = await run(
      set({
        values: {
          is_breaking: "{{ research.output.severity in ['high', 'critical'] }}",
          target_branch: "{{ workflow.input.branch or 'main' }}",
          count: '{{ research.output.items | length }}',
        },
      }),
      { scope: { research: { output: { severity: 'high', items: [1, 2, 3] } } } },
    );
    expect(outcome.output).toEqual({ is_breaking: true, target_branch: 'main', count: 3 });
  });

  it('applies output_type as in Conductor', () => {
    expect(coerceValue(' 007 ', 'string')).toBe(' 007 ');
    expect(coerceValue('42', 'number')).toBe(42);
    expect(coerceValue('3.5', 'number')).toBe(3.5);
    expect(coerceValue(' 12 ', 'integer')).toBe(12);
    for (const word of ['true', 'Yes', 'y', 'ON', '1']) expect(coerceValue(word, 'boolean')).toBe(true);
    for (const word of ['false', 'No', 'n', 'off', '0']) expect(coerceValue(word, 'boolean')).toBe(false);
    expect(coerceValue('- a\n- b', 'list')).toEqual(['a', 'b']);
    expect(coerceValue('{a: 1}', 'dict')).toEqual({ a: 1 });
    // auto: empty is "", a comment stays text, null markers are null, broken YAML stays text.
    expect(coerceValue('  ', 'auto')).toBe('');
    expect(coerceValue('# just a note', 'auto')).toBe('# just a note');
    expect(coerceValue('null', 'auto')).toBeNull();
    expect(coerceValue('a: [b', 'auto')).toBe('a: [b');
    expect(coerceValue('2024-01-02', 'auto')).toBe('2024-01-02');
  });

  it('fails naming the step when a value cannot take its output_type', async () => {
    const integer = await run(set({ value: '4.5', outputType: 'integer' }));
    expect(integer.status).toBe('failed');
    expect(integer.error?.message).toMatch(/step "bind": cannot coerce "4.5" to integer/);
    const boolean = await run(set({ value: '{{ "" }}', outputType: 'boolean' }));
    expect(boolean.error?.message).toMatch(/rendered nothing/);
    const list = await run(set({ value: '{a: 1}', outputType: 'list' }));
    expect(list.error?.message).toMatch(/expected output_type: list but got a dict/);
  });

  it('validates a dict against output:, and refuses output: on a scalar', async () => {
    const output = { count: field('number') };
    expect((await run(set({ values: { count: '3' }, output }))).status).toBe('completed');
    const wrong = await run(set({ values: { count: 'three' }, output }));
    expect(wrong.status).toBe('failed');
    expect(wrong.error?.message).toMatch(/count/);
    const scalar = await run(set({ value: '3', output }));
    expect(scalar.error?.message).toMatch(/its value is an int, not a dict; use values:/);
  });
});
