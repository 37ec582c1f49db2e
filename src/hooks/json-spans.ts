/**
 * Where each value of a JSON text sits, so a settings file can be edited in place: the hook entry
 * inserted or removed as text, every other byte (the user's spacing, key order, escapes) left alone.
 * A re-serialised file would reformat everything the user wrote by hand.
 *
 * Only for text `JSON.parse` has accepted: the scanner trusts the grammar and keeps no error paths.
 */

/** A value's span: `text.slice(start, end)` is its source. */
export type JsonSpan = JsonObjectSpan | JsonArraySpan | JsonScalarSpan;

export interface JsonObjectSpan {
  kind: 'object';
  start: number;
  end: number;
  members: JsonMemberSpan[];
}

export interface JsonMemberSpan {
  key: string;
  /** Where the key's opening quote is: the member's source runs from here to `value.end`. */
  start: number;
  /** Just past the key's closing quote. */
  keyEnd: number;
  value: JsonSpan;
}

export interface JsonArraySpan {
  kind: 'array';
  start: number;
  end: number;
  items: JsonSpan[];
}

export interface JsonScalarSpan {
  kind: 'scalar';
  start: number;
  end: number;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const SCALAR = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

/** The spans of a JSON text that `JSON.parse` accepted. */
export function jsonSpans(text: string): JsonSpan {
  let position = 0;
  const skip = () => {
    while (WHITESPACE.has(text[position] ?? '')) position++;
  };
  const string = (): string => {
    const start = position++;
    while (text[position] !== '"') position += text[position] === '\\' ? 2 : 1;
    position++;
    return JSON.parse(text.slice(start, position)) as string;
  };
  const value = (): JsonSpan => {
    skip();
    const start = position;
    const head = text[position];
    if (head === '{') {
      position++;
      const members: JsonMemberSpan[] = [];
      for (skip(); text[position] !== '}'; skip()) {
        if (text[position] === ',') {
          position++;
          skip();
        }
        const keyStart = position;
        const key = string();
        const keyEnd = position;
        skip();
        position++; // the colon
        members.push({ key, start: keyStart, keyEnd, value: value() });
      }
      position++;
      return { kind: 'object', start, end: position, members };
    }
    if (head === '[') {
      position++;
      const items: JsonSpan[] = [];
      for (skip(); text[position] !== ']'; skip()) {
        if (text[position] === ',') position++;
        items.push(value());
      }
      position++;
      return { kind: 'array', start, end: position, items };
    }
    if (head === '"') {
      string();
      return { kind: 'scalar', start, end: position };
    }
    SCALAR.lastIndex = position;
    SCALAR.exec(text);
    position = SCALAR.lastIndex;
    return { kind: 'scalar', start, end: position };
  };
  return value();
}

/** The member named `key` of an object span, if any (the last one, as `JSON.parse` keeps the last). */
export function memberOf(object: JsonObjectSpan, key: string): JsonMemberSpan | undefined {
  return object.members.findLast((member) => member.key === key);
}
