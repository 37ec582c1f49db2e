import { describe, expect, it } from 'vitest';
import { schemaErrors } from '../core/json-schema.js';
import type { JsonSchema } from '../core/call-types.js';
import { conformingValue, patternSample } from './conforming-value.js';

describe('conformingValue', () => {
  it('fills every field of a schema with Conductor-style constraints, and the value validates', () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: {
        verdict: { type: 'string', enum: ['passed', 'failed'] },
        ticket_ref: { type: 'string', pattern: '^TICK-[0-9]{4}$' },
        score: { type: 'number', minimum: 0, maximum: 100 },
        attempts: { type: 'integer', minimum: 1, exclusiveMaximum: 5 },
        summary: { type: 'string', minLength: 30, maxLength: 200 },
        code: { type: 'string', maxLength: 3 },
        notes: { type: ['string', 'null'] },
        approved: { type: 'boolean' },
        findings: { type: 'array', items: { type: 'string' }, minItems: 2 },
        details: { type: 'object', properties: { reviewer: { type: 'string' } }, required: ['reviewer'] },
      },
      required: ['verdict', 'ticket_ref', 'score', 'summary', 'approved'],
    };
    const value = conformingValue(schema);
    expect(schemaErrors(schema, value)).toEqual([]);
    expect(value).toEqual({
      verdict: 'passed',
      ticket_ref: 'TICK-0000',
      score: 100,
      attempts: 4,
      summary: 'sample summary................',
      code: 'sam',
      notes: 'sample notes',
      approved: true,
      findings: ['sample finding', 'sample finding'],
      details: { reviewer: 'sample reviewer' },
    });
  });

  it('follows local $refs, anyOf, allOf and Gemini upper-case types; stops at recursion', () => {
    const schema: JsonSchema = {
      type: 'object',
      $defs: {
        node: { type: 'object', properties: { label: { type: 'string' }, child: { $ref: '#/$defs/node' } } },
      },
      properties: {
        tree: { $ref: '#/$defs/node' },
        either: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 3, maximum: 7 }] },
        both: {
          allOf: [{ properties: { a: { type: 'string' } } }, { properties: { b: { type: 'boolean' } } }],
        },
        fixed: { const: 'v1' },
      },
    };
    const value = conformingValue(schema) as Record<string, unknown>;
    expect(value['either']).toBe(7);
    expect(value['both']).toEqual({ a: 'sample a', b: true });
    expect(value['fixed']).toBe('v1');
    expect(JSON.stringify(value['tree'])).toContain('"label":"sample label"');
    expect(conformingValue({ type: 'OBJECT', properties: { n: { type: 'NUMBER' } } })).toEqual({ n: 100 });
    expect(conformingValue({ type: 'array', items: { type: 'string' }, maxItems: 0 })).toEqual([]);
    expect(conformingValue({ type: 'string', format: 'date-time' })).toBe('2025-01-01T00:00:00Z');
  });

  it("takes the first value a string's description lists, as a model reading it would", () => {
    const schema = {
      type: 'object',
      properties: {
        approval: { type: 'string', description: 'Approval decision (approved, conditional, rejected)' },
        verdict: { type: 'string', description: 'One of "approved" or "needs_revision".' },
        action: { type: 'string', description: 'One of `noop`, `refresh`, or `abort`.' },
        summary: { type: 'string', description: 'Brief executive summary (2-3 sentences)' },
        files: { type: 'string', description: 'Details (tasks, acceptance criteria, files)' },
        tone: { type: 'string', description: 'The tone (e.g. "informative", "casual")' },
      },
    };
    expect(conformingValue(schema)).toEqual({
      approval: 'approved',
      verdict: 'approved',
      action: 'noop',
      summary: 'sample summary',
      files: 'sample files',
      tone: 'sample tone',
    });
  });

  it('samples simple patterns and gives up on the rest', () => {
    for (const pattern of [
      '^[a-z]+-\\d{2,}$',
      '^(?:feat|fix)/[\\w.-]+$',
      '^[^0-9]{3}$',
      'x?y*z+',
      '^v\\.\\d+$',
    ]) {
      const sample = patternSample(pattern);
      expect(sample, pattern).toBeDefined();
      expect(new RegExp(pattern, 'u').test(sample ?? ''), `${pattern} → ${sample}`).toBe(true);
    }
    expect(patternSample('^(?=.*\\d)\\w+$')).toBeUndefined();
    expect(patternSample('(')).toBeUndefined();
  });
});
