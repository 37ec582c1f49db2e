type Json = Record<string, unknown>;

const asObject = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};

/** Schemas nest deeper than this only by recursion (`$ref` to themselves): the value stops there. */
const MAX_DEPTH = 12;

/** Sample values for string formats a plain word would not satisfy. */
const FORMATS: Record<string, string> = {
  'date-time': '2025-01-01T00:00:00Z',
  date: '2025-01-01',
  time: '00:00:00Z',
  email: 'someone@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
};

/**
 * A small, deterministic value that conforms to a JSON schema (the subset structured-output
 * requests carry: `type`, `enum`, `const`, `properties`, `required`, `items`, `minItems`,
 * `minLength`/`maxLength`, `minimum`/`maximum`, simple `pattern`s, `format`, `anyOf`/`oneOf`/`allOf`,
 * local `$ref`s; Gemini's upper-case types too). Every property is filled, not only the required
 * ones; booleans are `true` and numbers the maximum when there is one (else 100), so a loop that
 * routes on an approval or a score threshold ends; a string whose description lists its values is the
 * first of them, any other names its field (`"sample summary"`); arrays hold one item (or `minItems`).
 */
export function conformingValue(schema: unknown, name = 'value'): unknown {
  return valueFor(schema, name, asObject(schema), 0);
}

function valueFor(schema: unknown, name: string, root: Json, depth: number): unknown {
  const node = resolve(asObject(schema), root);
  if (depth > MAX_DEPTH) return null;
  if ('const' in node) return node['const'];
  if (Array.isArray(node['enum']) && node['enum'].length > 0) return node['enum'][0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = Array.isArray(node[key]) ? node[key].map(asObject) : [];
    const chosen = options.find((option) => typeOf(resolve(option, root)) !== 'null') ?? options[0];
    if (chosen !== undefined) return valueFor({ ...without(node, key), ...chosen }, name, root, depth + 1);
  }
  if (Array.isArray(node['allOf'])) {
    const merged = node['allOf'].map(asObject).reduce<Json>(
      (all, part) => {
        const resolved = resolve(part, root);
        return {
          ...all,
          ...resolved,
          properties: { ...asObject(all['properties']), ...asObject(resolved['properties']) },
        };
      },
      without(node, 'allOf'),
    );
    return valueFor(merged, name, root, depth + 1);
  }
  switch (typeOf(node)) {
    case 'object':
      return objectValue(node, root, depth);
    case 'array':
      return arrayValue(node, name, root, depth);
    case 'integer':
      return numberValue(node, true);
    case 'number':
      return numberValue(node, false);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return stringValue(node, name);
  }
}

/** The schema's type: the first of a list that is not `null`, lower-cased, or what its keys imply. */
function typeOf(node: Json): string {
  const declared = node['type'];
  const types = (Array.isArray(declared) ? declared : [declared])
    .filter((type): type is string => typeof type === 'string')
    .map((type) => type.toLowerCase());
  const chosen = types.find((type) => type !== 'null') ?? types[0];
  if (chosen !== undefined) return chosen;
  if (node['properties'] !== undefined) return 'object';
  if (node['items'] !== undefined) return 'array';
  return 'string';
}

function resolve(node: Json, root: Json): Json {
  let current = node;
  for (let hops = 0; hops < MAX_DEPTH && typeof current['$ref'] === 'string'; hops++) {
    const path = current['$ref'];
    if (!path.startsWith('#')) break;
    let target: unknown = root;
    for (const part of path.slice(1).split('/').filter(Boolean)) {
      target = asObject(target)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    current = { ...without(current, '$ref'), ...asObject(target) };
  }
  return current;
}

/** A numeric keyword; Gemini's `Schema` sends the counts (`minItems`, `maxLength`, …) as strings. */
function numberAt(node: Json, key: string): number | undefined {
  const value = node[key];
  if (typeof value === 'number') return value;
  return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))
    ? Number(value)
    : undefined;
}

function without(node: Json, key: string): Json {
  const { [key]: _dropped, ...rest } = node;
  return rest;
}

function objectValue(node: Json, root: Json, depth: number): Json {
  const value: Json = {};
  for (const [key, property] of Object.entries(asObject(node['properties']))) {
    value[key] = valueFor(property, key, root, depth + 1);
  }
  const required = Array.isArray(node['required']) ? node['required'] : [];
  for (const key of required) {
    if (typeof key === 'string' && !(key in value)) value[key] = `sample ${key}`;
  }
  return value;
}

function arrayValue(node: Json, name: string, root: Json, depth: number): unknown[] {
  const minimum = numberAt(node, 'minItems') ?? 0;
  const maximum = numberAt(node, 'maxItems') ?? Infinity;
  const count = Math.min(Math.max(1, minimum), maximum);
  const prefix = Array.isArray(node['prefixItems']) ? node['prefixItems'] : [];
  return Array.from({ length: count }, (_, index) =>
    valueFor(prefix[index] ?? node['items'], singular(name), root, depth + 1),
  );
}

function singular(name: string): string {
  return name.length > 3 && name.endsWith('s') && !name.endsWith('ss') ? name.slice(0, -1) : name;
}

function numberValue(node: Json, integer: boolean): number {
  const number = (key: string): number | undefined => numberAt(node, key);
  const step = integer ? 1 : 0.5;
  const exclusiveMaximum = number('exclusiveMaximum');
  const exclusiveMinimum = number('exclusiveMinimum');
  const maximum = number('maximum') ?? (exclusiveMaximum === undefined ? undefined : exclusiveMaximum - step);
  const minimum = number('minimum') ?? (exclusiveMinimum === undefined ? undefined : exclusiveMinimum + step);
  let value = maximum ?? Math.max(minimum ?? 100, 100);
  if (integer) value = Math.floor(value);
  if (minimum !== undefined && value < minimum) value = integer ? Math.ceil(minimum) : minimum;
  return value;
}

function stringValue(node: Json, name: string): string {
  const format = typeof node['format'] === 'string' ? FORMATS[node['format']] : undefined;
  const pattern = typeof node['pattern'] === 'string' ? node['pattern'] : undefined;
  let value = format ?? describedChoice(node['description']) ?? `sample ${name}`;
  if (pattern !== undefined) value = patternSample(pattern) ?? value;
  const minLength = numberAt(node, 'minLength') ?? 0;
  const maxLength = numberAt(node, 'maxLength') ?? Infinity;
  if (value.length < minLength) value = value.padEnd(minLength, '.');
  return value.length > maxLength ? value.slice(0, maxLength) : value;
}

/**
 * The first of the values a string's description lists, as a model reading it would pick one:
 * `One of "approved" or "needs_revision"`, ``one of `noop`, `refresh`, or `abort` ``, or a
 * parenthesised list of single words, `Approval decision (approved, conditional, rejected)`.
 */
function describedChoice(description: unknown): string | undefined {
  if (typeof description !== 'string') return undefined;
  const oneOf = /\bone of:?\s+(["'`])([^"'`]+)\1/i.exec(description);
  if (oneOf !== null) return oneOf[2];
  for (const [, inside] of description.matchAll(/\(([^()]*)\)/g)) {
    const words = (inside ?? '').split(/\s*(?:,|\bor\b|\/)\s*/).filter((word) => word !== '');
    if (words.length >= 2 && words.every((word) => /^[a-z][a-z_-]*$/.test(word))) return words[0];
  }
  return undefined;
}

/**
 * A string matching a simple regular expression: literals, escapes (`\d`, `\w`, `\s`, `\.`), classes,
 * `.`, groups with alternatives (the first is taken) and quantifiers (their least count). Undefined
 * when the pattern is beyond that, or the sample does not match.
 */
export function patternSample(pattern: string): string | undefined {
  let compiled: RegExp;
  try {
    compiled = new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
  try {
    const sample = sequence(pattern, { index: 0 });
    return compiled.test(sample) ? sample : undefined;
  } catch {
    return undefined;
  }
}

interface Cursor {
  index: number;
}

/** Reads atoms with their quantifiers until the end, a `)` or a `|`, which it leaves unread. */
function sequence(pattern: string, cursor: Cursor): string {
  let out = '';
  while (cursor.index < pattern.length) {
    const char = pattern[cursor.index] as string;
    if (char === ')' || char === '|') break;
    if (char === '^' || char === '$') {
      cursor.index++;
      continue;
    }
    const atom = readAtom(pattern, cursor);
    out += atom.repeat(readQuantifier(pattern, cursor));
  }
  return out;
}

function readAtom(pattern: string, cursor: Cursor): string {
  const char = pattern[cursor.index++] as string;
  switch (char) {
    case '\\':
      return escapeSample(pattern[cursor.index++] ?? '');
    case '.':
      return 'a';
    case '[':
      return classSample(pattern, cursor);
    case '(': {
      if (pattern[cursor.index] === '?') {
        if (pattern[cursor.index + 1] !== ':') throw new Error('lookaround or named group');
        cursor.index += 2;
      }
      const first = sequence(pattern, cursor);
      // Skip the other alternatives: the first one is the sample.
      let level = 0;
      while (cursor.index < pattern.length) {
        const next = pattern[cursor.index] as string;
        if (next === '\\') cursor.index++;
        else if (next === '(') level++;
        else if (next === ')') {
          if (level === 0) break;
          level--;
        }
        cursor.index++;
      }
      if (pattern[cursor.index] !== ')') throw new Error('unclosed group');
      cursor.index++;
      return first;
    }
    default:
      return char;
  }
}

function escapeSample(char: string): string {
  if (char === 'd') return '1';
  if (char === 'w') return 'a';
  if (char === 's') return ' ';
  if (/[DWSbBpPk0-9]/.test(char)) throw new Error(`escape \\${char}`);
  return char;
}

/** The first character a `[…]` class accepts (for a negated class, the first of a few that it does not exclude). */
function classSample(pattern: string, cursor: Cursor): string {
  const negated = pattern[cursor.index] === '^';
  if (negated) cursor.index++;
  let body = '';
  while (cursor.index < pattern.length && (pattern[cursor.index] !== ']' || body === '')) {
    if (pattern[cursor.index] === '\\') body += pattern[cursor.index++];
    body += pattern[cursor.index++];
  }
  if (pattern[cursor.index] !== ']') throw new Error('unclosed class');
  cursor.index++;
  const test = new RegExp(`[${negated ? '^' : ''}${body}]`, 'u');
  const candidates = negated ? 'axA1 _-' : `${body.replace(/\\/g, '')}a1A`;
  const chosen = [...candidates].find((candidate) => test.test(candidate));
  if (chosen === undefined) throw new Error('no sample for the class');
  return chosen;
}

/** How many times the atom just read repeats: a quantifier's least count (none for `*` and `?`). */
function readQuantifier(pattern: string, cursor: Cursor): number {
  const char = pattern[cursor.index];
  let count = 1;
  if (char === '*' || char === '?' || char === '+') {
    count = char === '+' ? 1 : 0;
    cursor.index++;
  } else {
    const braces = char === '{' ? /^\{(\d+)(,\d*)?\}/.exec(pattern.slice(cursor.index)) : null;
    if (braces === null) return count;
    count = Number(braces[1]);
    cursor.index += braces[0].length;
  }
  // A lazy quantifier's `?`.
  if (pattern[cursor.index] === '?') cursor.index++;
  return count;
}
