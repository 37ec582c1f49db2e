import { parse as parseYaml } from 'yaml';
import { validateOutput } from '../output-schema.js';
import type { SetStep } from '../model.js';
import type { StepExecutor, StepOutcome } from '../step-executor.js';
import { isPlainObject } from '../../core/plain-object.js';

type OutputType = SetStep['outputType'];

/** A coercion that could not be made; becomes the step's failure. */
class CoercionError extends Error {}

/**
 * `type: set`: binds typed values into the run's context, no call and no process, as Conductor does.
 * `value:` renders one template and coerces it by `output_type` (`auto`: a YAML safe-load, so `42`,
 * `true`, `[a, b]` and `{a: 1}` become native values); `values:` renders each binding against the
 * context before the step (none sees another) and is always a dict. A declared `output:` schema
 * applies only to a dict value.
 */
export const executeSetStep: StepExecutor = (context) => {
  const step = context.step as SetStep;
  let value: unknown;
  try {
    if (step.values !== undefined) {
      const bound: Record<string, unknown> = {};
      for (const [key, template] of Object.entries(step.values)) {
        bound[key] = coerceValue(context.render(template, `values.${key}`), 'auto');
      }
      value = bound;
    } else {
      value = coerceValue(context.render(step.value ?? '', 'value'), step.outputType);
    }
  } catch (error) {
    if (!(error instanceof CoercionError)) throw error;
    return Promise.resolve(failure(`step "${step.name}": ${error.message}`));
  }
  if (step.output !== undefined) {
    if (!isPlainObject(value)) {
      return Promise.resolve(
        failure(
          `step "${step.name}" declares an output: schema but its value is ${describe(value)}, not a dict; use values: to bind a dict, or drop output:`,
        ),
      );
    }
    const violation = validateOutput(step.output, value);
    if (violation !== undefined) {
      return Promise.resolve(
        failure(`step "${step.name}": value does not match its output: schema: ${violation}`),
      );
    }
  }
  return Promise.resolve({ status: 'completed', output: value, costUsd: 0 });
};

const TRUE_WORDS = new Set(['true', '1', 'yes', 'y', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'n', 'off']);
/** Warnings (a stringified key) would print to the terminal; the value is what counts. */
const YAML_OPTIONS = { logLevel: 'error' } as const;
const NULL_WORDS = new Set(['null', '~', 'Null', 'NULL']);
const INTEGER = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Conductor's `output_type` table, applied to a rendered string. */
export function coerceValue(rendered: string, outputType: OutputType): unknown {
  if (outputType === 'string') return rendered;
  const trimmed = rendered.trim();
  switch (outputType) {
    case 'auto':
      return autoValue(rendered, trimmed);
    case 'boolean': {
      const word = trimmed.toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
      throw new CoercionError(
        `cannot coerce ${JSON.stringify(rendered)} to boolean${trimmed === '' ? ' (the template rendered nothing)' : ''}; render true/false, 1/0, yes/no, y/n or on/off`,
      );
    }
    case 'integer':
      if (INTEGER.test(trimmed)) return Number(trimmed);
      throw new CoercionError(
        `cannot coerce ${JSON.stringify(rendered)} to integer; render an integer such as 42`,
      );
    case 'number':
      if (INTEGER.test(trimmed) || FLOAT.test(trimmed)) return Number(trimmed);
      throw new CoercionError(
        `cannot coerce ${JSON.stringify(rendered)} to number; render a number such as 42 or 3.14`,
      );
    case 'list':
    case 'dict':
      return containerValue(rendered, outputType);
  }
}

/** YAML safe-load; text that is not YAML, or is only a comment, stays the string it was. */
function autoValue(rendered: string, trimmed: string): unknown {
  if (trimmed === '') return '';
  let parsed: unknown;
  try {
    parsed = parseYaml(rendered, YAML_OPTIONS);
  } catch {
    return rendered;
  }
  if (parsed === null && !NULL_WORDS.has(trimmed)) return rendered;
  return parsed === undefined ? rendered : parsed;
}

function containerValue(rendered: string, outputType: 'list' | 'dict'): unknown {
  let parsed: unknown;
  try {
    parsed = parseYaml(rendered, YAML_OPTIONS);
  } catch {
    throw new CoercionError(
      `cannot parse ${JSON.stringify(rendered)} for output_type: ${outputType}; render YAML or JSON such as [1, 2] or {a: 1}`,
    );
  }
  const matches = outputType === 'list' ? Array.isArray(parsed) : isPlainObject(parsed);
  if (!matches) {
    throw new CoercionError(
      `expected output_type: ${outputType} but got ${describe(parsed)}: ${JSON.stringify(rendered)}`,
    );
  }
  return parsed;
}

/** Python's names for the kinds, as Conductor's messages use them. */
function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'object') return 'a dict';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an int' : 'a float';
  if (typeof value === 'boolean') return 'a bool';
  return 'a str';
}

function failure(message: string): StepOutcome {
  return { status: 'failed', costUsd: 0, error: { code: 'SCHEMA', message } };
}
