import { SwitchboardError } from '../core/errors.js';
import { hasType } from './format/build.js';
import type { InputDefinition, ValueType, WorkflowDefinition } from './model.js';

/**
 * A run's `workflow.input`: the values given (`-i name=value` strings, or typed values from the
 * library) coerced to the declared types, declared defaults, and Conductor's zero values for optional
 * inputs given no value and no default (`""`, `0`, `false`, `[]`, `{}`), so templates render cleanly.
 * Inputs the file does not declare pass through as Conductor's do (`-i` text read as true/false/null,
 * a JSON list or object, a number, else text). A missing required input or a value of the wrong type is a
 * one-line WORKFLOW_INVALID.
 */
export function resolveInputs(
  definition: Pick<WorkflowDefinition, 'input' | 'file'>,
  given: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const declared = definition.input;
  const resolved: Record<string, unknown> = {};
  // Conductor passes inputs the file does not declare through (its examples read `workflow.input.topic`
  // with no `input:` section), coercing `-i` text as its CLI does.
  for (const [name, value] of Object.entries(given)) {
    if (declared[name] === undefined && value !== undefined) resolved[name] = undeclaredValue(value);
  }
  for (const [name, input] of Object.entries(declared)) {
    if (Object.hasOwn(given, name) && given[name] !== undefined) {
      resolved[name] = coerce(given[name], input, name, definition.file);
    } else if (input.default !== undefined) {
      resolved[name] = structuredClone(input.default);
    } else if (!input.required) {
      resolved[name] = zeroValue(input.type);
    } else {
      throw invalid(
        definition.file,
        name,
        `input "${name}" is required`,
        `pass -i ${name}=${placeholder(input.type)}`,
      );
    }
  }
  return resolved;
}

function coerce(value: unknown, input: InputDefinition, name: string, file: string): unknown {
  const wrong = (detail: string): never => {
    throw invalid(
      file,
      name,
      `input "${name}" must be ${article(input.type)}: ${detail}`,
      `pass -i ${name}=${placeholder(input.type)}`,
    );
  };
  if (typeof value !== 'string') {
    if (input.type === 'string' && (typeof value === 'number' || typeof value === 'boolean'))
      return String(value);
    if (hasType(value, input.type) && (input.type !== 'number' || Number.isFinite(value))) return value;
    return wrong(`got ${describe(value)}`);
  }
  switch (input.type) {
    case 'string':
      return value;
    case 'number': {
      const number = value.trim() === '' ? Number.NaN : Number(value);
      return Number.isFinite(number) ? number : wrong(`"${value}" is not a number`);
    }
    case 'boolean': {
      const word = value.trim().toLowerCase();
      if (['true', 'yes', '1', 'on'].includes(word)) return true;
      if (['false', 'no', '0', 'off'].includes(word)) return false;
      return wrong(`"${value}" is not true or false`);
    }
    default: {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        return wrong('the value is not valid JSON');
      }
      return hasType(parsed, input.type) ? parsed : wrong(`the JSON is ${describe(parsed)}`);
    }
  }
}

/** An undeclared `-i` value as Conductor's CLI reads one. */
function undeclaredValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const word = value.toLowerCase();
  if (word === 'true') return true;
  if (word === 'false') return false;
  if (word === 'null') return null;
  if (value.startsWith('[') || value.startsWith('{')) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }
  if (/^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  return value;
}

/** Conductor's zero value of a type (fresh objects each time). */
export function zeroValue(type: ValueType): unknown {
  return { string: '', number: 0, boolean: false, array: [], object: {} }[type];
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function article(type: ValueType): string {
  return {
    string: 'a string',
    number: 'a number',
    boolean: 'true or false',
    array: 'a JSON list',
    object: 'a JSON object',
  }[type];
}

function placeholder(type: ValueType): string {
  return { string: 'VALUE', number: 'NUMBER', boolean: 'true', array: "'[...]'", object: "'{...}'" }[type];
}

function invalid(file: string, name: string, message: string, hint: string): SwitchboardError {
  return new SwitchboardError('WORKFLOW_INVALID', message, {
    hint,
    details: { file, field: `input.${name}` },
  });
}
