import { describe, expect, it } from 'vitest';
import type { OutputField } from './model.js';
import { outputJsonSchema, validateOutput } from './output-schema.js';

const field = (type: OutputField['type'], extra: Partial<OutputField> = {}): OutputField => ({
  type,
  required: true,
  nullable: false,
  ...extra,
});

const fields: Record<string, OutputField> = {
  verdict: field('string', { enum: ['approve', 'revise'] }),
  score: field('number', { minimum: 0, maximum: 10 }),
  findings: field('array', { items: field('string', { minLength: 1 }) }),
  meta: field('object', {
    properties: { reviewer: field('string'), note: field('string', { required: false, nullable: true }) },
  }),
};

describe('output schema', () => {
  it('accepts a value that meets every constraint, with extra fields', () => {
    const value = {
      verdict: 'approve',
      score: 7,
      findings: ['ok'],
      meta: { reviewer: 'g', note: null },
      extra: 1,
    };
    expect(validateOutput(fields, value)).toBeUndefined();
  });

  it('names the first field that breaks a constraint', () => {
    const base = { verdict: 'approve', score: 7, findings: ['ok'], meta: { reviewer: 'g' } };
    expect(validateOutput(fields, { ...base, verdict: 'maybe' })).toMatch(/^\/verdict: /);
    expect(validateOutput(fields, { ...base, score: 11 })).toMatch(/^\/score: must be <= 10/);
    expect(validateOutput(fields, { ...base, findings: [''] })).toMatch(/^\/findings\/0: /);
    expect(validateOutput(fields, { ...base, meta: {} })).toMatch(/reviewer/);
    const { score: _score, ...withoutScore } = base;
    expect(validateOutput(fields, withoutScore)).toMatch(/score/);
  });

  it('writes JSON Schema a provider can be asked to follow', () => {
    const schema = outputJsonSchema({ verdict: fields.verdict as OutputField });
    expect(schema).toEqual({
      type: 'object',
      properties: { verdict: { type: 'string', enum: ['approve', 'revise'] } },
      required: ['verdict'],
    });
  });
});
