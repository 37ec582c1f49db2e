/**
 * The prompt for another try after an answer failed the schema: the original request, what was wrong
 * with the answer (not JSON / missing field X / wrong type at path Y), and the answer itself.
 */
export function reaskPrompt(originalPrompt: string, raw: string, errors: readonly string[]): string {
  const diagnosis = errors.length === 0 ? ['it is not valid JSON'] : errors.map(describeError);
  return [
    originalPrompt,
    '',
    'Your previous answer could not be used:',
    ...diagnosis.map((line) => `- ${line}`),
    '',
    'Previous answer:',
    raw.length > 4_000 ? `${raw.slice(0, 4_000)}…` : raw,
    '',
    'Answer again with only a JSON value that matches the required schema, and nothing else.',
  ].join('\n');
}

/** Turns an ajv message (`/path: must have required property 'x'`) into plain words. */
export function describeError(error: string): string {
  const [path, ...rest] = error.split(': ');
  const message = rest.join(': ');
  const where = path === '(root)' || path === undefined ? 'the top level' : `path ${path}`;
  const missing = /must have required property '([^']+)'/.exec(message);
  if (missing !== null) return `missing field "${missing[1]}" at ${where}`;
  const type = /must be (\w+)/.exec(message);
  if (type !== null && /^(string|number|integer|boolean|object|array|null)$/.test(type[1] ?? '')) {
    return `wrong type at ${where}: expected ${type[1]}`;
  }
  if (message === '') return error;
  return `${where}: ${message}`;
}
