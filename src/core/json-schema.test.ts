import { describe, expect, it } from 'vitest';
import { compileSchema, schemaErrors } from './json-schema.js';

const routingSchema = (names: string[]) => ({
  type: 'object',
  properties: { skill: { type: 'string', enum: names } },
  required: ['skill'],
});

describe('compileSchema', () => {
  it('compiles an equal schema once even when each call builds a new object', () => {
    const first = compileSchema(routingSchema(['a', 'b', 'none']));
    const second = compileSchema(routingSchema(['a', 'b', 'none']));
    expect(second).toBe(first);
    expect(compileSchema(routingSchema(['a', 'c', 'none']))).not.toBe(first);
  });

  it('keeps validating correctly past its cache bound, and accepts a schema id seen before', () => {
    for (let index = 0; index < 700; index++) {
      const schema = routingSchema([`skill-${index}`, 'none']);
      expect(schemaErrors(schema, { skill: `skill-${index}` })).toEqual([]);
      expect(schemaErrors(schema, { skill: 'other' })).toHaveLength(1);
    }
    const withId = () => ({ $id: 'https://example.test/answer', type: 'object', required: ['x'] });
    expect(schemaErrors(withId(), {})).toHaveLength(1);
    expect(schemaErrors({ ...withId(), required: ['y'] }, { x: 1 })).toEqual([
      "(root): must have required property 'y'",
    ]);
  });

  it('refuses a schema that is not one, naming the problem', () => {
    expect(() => compileSchema({ type: 'object', properties: { a: { type: 'nonsense' } } })).toThrow(
      /not a valid JSON Schema/,
    );
  });
});
