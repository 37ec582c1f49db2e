import { workflowInvalid, type ProblemPlace } from './problem.js';

/** Turns a key path into the step/field/position a message names. */
export type PlaceOf = (path: Array<string | number>) => ProblemPlace;

const ENV_REFERENCE = /\$\{([^}:]+)(?::-([^}]*))?\}/g;
const MAX_DEPTH = 10;

/**
 * Conductor's environment substitution: every string value's `${VAR}` / `${VAR:-default}` becomes the
 * variable's value (or the default), recursively when a value holds another reference. Keys stay.
 * A variable that is unset and has no default is an error naming where it is used.
 */
export function substituteEnv(
  data: unknown,
  placeOf: PlaceOf,
  env: NodeJS.ProcessEnv = process.env,
): unknown {
  return walk(data, [], placeOf, env);
}

function walk(value: unknown, path: Array<string | number>, file: PlaceOf, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') return substitute(value, path, file, env, MAX_DEPTH);
  if (Array.isArray(value)) return value.map((item, index) => walk(item, [...path, index], file, env));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, walk(item, [...path, key], file, env)]),
    );
  }
  return value;
}

function substitute(
  text: string,
  path: Array<string | number>,
  file: PlaceOf,
  env: NodeJS.ProcessEnv,
  depth: number,
): string {
  if (!text.includes('${')) return text;
  const place = file(path);
  if (depth === 0) {
    throw workflowInvalid(
      place,
      'environment variables refer to each other more than 10 levels deep',
      'check for a circular reference among the variables used here',
    );
  }
  const result = text.replace(ENV_REFERENCE, (_match, name: string, fallback: string | undefined) => {
    const found = env[name];
    if (found !== undefined) return found;
    if (fallback !== undefined) return fallback;
    throw workflowInvalid(
      place,
      `environment variable ${name} is not set`,
      `set ${name}, or write \${${name}:-default} to give a default`,
    );
  });
  return new RegExp(ENV_REFERENCE.source).test(result)
    ? substitute(result, path, file, env, depth - 1)
    : result;
}

/** `['agents', 2, 'prompt']` → `agents[2].prompt`. */
export function dotted(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((part, index) =>
      typeof part === 'number' ? `[${part}]` : index === 0 ? String(part) : `.${String(part)}`,
    )
    .join('');
}
