import type { Ajv2020 as Ajv2020Type } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import type { JsonSchema } from './call-types.js';
import { SwitchboardError } from './errors.js';
import { loadAjv2020 } from './lazy-packages.js';
import { linearRegex } from './linear-regex.js';

// Draft 2020-12, the draft zod's `z.toJSONSchema` writes; `$schema` is dropped before compiling so
// schemas that declare draft-07 compile too (the keywords models are asked to follow are the same).
// Ajv is loaded at the first schema (it is CommonJS, so `require` keeps compileSchema synchronous):
// a process that never validates a schema, such as one that only routes, never pays for it.
let ajvInstance: Ajv2020Type | undefined;
function ajv(): Ajv2020Type {
  if (ajvInstance === undefined) {
    const Ajv2020 = loadAjv2020();
    // `pattern` and `patternProperties` come from callers (a /call schema, a workflow's output fields):
    // they run in RE2, so `^(a|a)+$` cannot stall the process, and a backreference fails the compile.
    ajvInstance = new Ajv2020({ allErrors: true, strict: false, code: { regExp: schemaRegExp } });
  }
  return ajvInstance;
}
// `code` names the engine in standalone code, which Switchboard never generates.
const schemaRegExp = Object.assign((pattern: string, flags: string) => linearRegex(pattern, flags), {
  code: 'linearRegex',
});
const compiled = new WeakMap<JsonSchema, ValidateFunction>();
/**
 * Compiled schemas by their text, for callers that build an equal schema object per call (the LLM
 * routing tier does, with the candidates as an enum). Bounded, least recently used out first: a
 * long-running process must not keep every schema it ever saw.
 */
const byText = new Map<string, ValidateFunction>();
const MAX_SCHEMAS_BY_TEXT = 500;

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
    const { $schema: _declaredDraft, ...body } = schema;
    const text = JSON.stringify(body);
    let validate = byText.get(text);
    if (validate === undefined) {
      validate = ajv().compile(body);
      // Ajv caches by object identity; this module's caches replace that one, which would grow forever.
      ajv().removeSchema(body);
      if (byText.size >= MAX_SCHEMAS_BY_TEXT) byText.delete(byText.keys().next().value as string);
    } else {
      byText.delete(text);
    }
    byText.set(text, validate);
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
