import type { JsonSchema } from '../core/call-types.js';
import { schemaErrors } from '../core/json-schema.js';
import type { OutputField } from './model.js';

/**
 * A step's `output:` fields as JSON Schema: what `call()` asks the model for and what a value is
 * checked against before it is stored. Top-level fields are all required (Conductor's rule); inside
 * `properties`, `required: false` makes a field optional. Extra fields are allowed, as in Conductor.
 */
export function outputJsonSchema(fields: Record<string, OutputField>): JsonSchema {
  return objectSchema(fields, true);
}

function objectSchema(fields: Record<string, OutputField>, topLevel: boolean): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, field] of Object.entries(fields)) {
    properties[name] = fieldSchema(field);
    if (topLevel || field.required) required.push(name);
  }
  return { type: 'object', properties, required };
}

function fieldSchema(field: OutputField): JsonSchema {
  const schema: JsonSchema = { type: field.nullable ? [field.type, 'null'] : field.type };
  if (field.description !== undefined) schema.description = field.description;
  if (field.enum !== undefined) schema.enum = field.nullable ? [...field.enum, null] : field.enum;
  if (field.pattern !== undefined) schema.pattern = field.pattern;
  if (field.minimum !== undefined) schema.minimum = field.minimum;
  if (field.maximum !== undefined) schema.maximum = field.maximum;
  if (field.minLength !== undefined) schema.minLength = field.minLength;
  if (field.maxLength !== undefined) schema.maxLength = field.maxLength;
  if (field.type === 'array' && field.items !== undefined) schema.items = fieldSchema(field.items);
  if (field.type === 'object' && field.properties !== undefined) {
    Object.assign(schema, objectSchema(field.properties, false), { type: schema.type });
  }
  return schema;
}

/** The first way `value` breaks the fields' schema, on one line (`/verdict: must be equal to one of the allowed values`), or undefined. */
export function validateOutput(fields: Record<string, OutputField>, value: unknown): string | undefined {
  const errors = schemaErrors(outputJsonSchema(fields), value);
  return errors[0];
}
