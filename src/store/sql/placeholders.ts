import type { SqlParams } from './sql-database.js';

/** A statement in PostgreSQL's numbered-placeholder form, and how to order a call's parameters for it. */
export interface NumberedStatement {
  text: string;
  /** `@name` placeholders by number, or undefined when the statement uses `?`. */
  names?: string[];
  /** How many `?` placeholders (when `names` is undefined). */
  count: number;
}

/**
 * Rewrites `?` and `@name` placeholders to `$1, $2, …` (the same name keeps one number), leaving quoted
 * strings, quoted identifiers and comments alone. A statement uses one style or the other, as in SQLite.
 */
export function toNumbered(sql: string): NumberedStatement {
  const names: string[] = [];
  let count = 0;
  let text = '';
  let index = 0;
  while (index < sql.length) {
    const char = sql[index]!;
    if (char === "'" || char === '"') {
      const end = closing(sql, index, char);
      text += sql.slice(index, end);
      index = end;
    } else if (char === '-' && sql[index + 1] === '-') {
      const end = sql.indexOf('\n', index);
      const stop = end === -1 ? sql.length : end;
      text += sql.slice(index, stop);
      index = stop;
    } else if (char === '?') {
      count += 1;
      text += `$${count}`;
      index += 1;
    } else if (char === '@' && /[A-Za-z_]/.test(sql[index + 1] ?? '')) {
      const match = /^@([A-Za-z_][A-Za-z0-9_]*)/.exec(sql.slice(index))!;
      const name = match[1]!;
      let number = names.indexOf(name) + 1;
      if (number === 0) number = names.push(name);
      text += `$${number}`;
      index += match[0].length;
    } else {
      text += char;
      index += 1;
    }
  }
  if (count > 0 && names.length > 0) throw new Error('a statement mixes ? and @name placeholders');
  return names.length > 0 ? { text, names, count: names.length } : { text, count };
}

/** Index just past the quote that closes the one at `start` (a doubled quote is an escaped one). */
function closing(sql: string, start: number, quote: string): number {
  let index = start + 1;
  while (index < sql.length) {
    if (sql[index] === quote) {
      if (sql[index + 1] === quote) index += 2;
      else return index + 1;
    } else index += 1;
  }
  return sql.length;
}

/** The values for a numbered statement, in placeholder order. */
export function orderParams(statement: NumberedStatement, params: SqlParams | undefined): unknown[] {
  if (params === undefined) return [];
  if (statement.names === undefined) {
    if (!Array.isArray(params)) throw new Error('a statement with ? placeholders takes an array of values');
    return params.map(toDriverValue);
  }
  if (Array.isArray(params)) throw new Error('a statement with @name placeholders takes an object');
  const byName = params as Readonly<Record<string, unknown>>;
  return statement.names.map((name) => {
    if (!(name in byName)) throw new Error(`missing value for @${name}`);
    return toDriverValue(byName[name]);
  });
}

/** better-sqlite3 stores a bigint as an integer; `pg` needs it as text to keep every digit. */
function toDriverValue(value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
