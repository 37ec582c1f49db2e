import { Ajv, type ValidateFunction } from 'ajv';
import type { JsonSchema } from './call-types.js';
import { SwitchboardError } from './errors.js';

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

/** Compiles a JSON Schema once, failing early with `INVALID_INPUT` when it is not a valid schema. */
export function compileSchema(schema: JsonSchema): ValidateFunction {
  const cached = compiled.get(schema);
  if (cached !== undefined) return cached;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new SwitchboardError('INVALID_INPUT', 'the schema must be a JSON Schema object', {
      hint: 'give an object such as {"type": "object", "properties": {...}}',
    });
  }
  try {
    const validate = ajv.compile(schema);
    compiled.set(schema, validate);
    return validate;
  } catch (error) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `the schema is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'fix the schema; https://json-schema.org describes the format',
        cause: error,
      },
    );
  }
}

/** Validates a value; returns the errors as readable `path: message` lines (empty when valid). */
export function schemaErrors(schema: JsonSchema, value: unknown): string[] {
  const validate = compileSchema(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map(
    (error) => `${error.instancePath === '' ? '(root)' : error.instancePath}: ${error.message ?? 'invalid'}`,
  );
}
