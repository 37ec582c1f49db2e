/**
 * Looking a run up by the start of its id (`switchboard agent show 3f2a`, `workflow status wf-mw`): the
 * `LIKE ? ESCAPE '\'` pattern for ids that start with `prefix`, its `%`, `_` and `\` taken literally.
 * Query with `LIMIT 2` and take `onlyMatch`: a prefix names a run only when it is the only one.
 */
export function idPrefixPattern(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
}

/** The one row a prefix matched, or undefined when it matched none or several. */
export function onlyMatch<T>(rows: readonly T[]): T | undefined {
  return rows.length === 1 ? rows[0] : undefined;
}
