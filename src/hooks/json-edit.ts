import type { JsonArraySpan, JsonObjectSpan, JsonSpan } from './json-spans.js';

// Text edits on a JSON file that copy its own style: the separator between siblings, the indent unit,
// the line ending. An insertion at the end of a container and the removal of that last child are exact
// inverses, which is what lets `hooks uninstall` give back the file `hooks install` found.

type Container = JsonObjectSpan | JsonArraySpan;

/** Inserts a member at the end of an object, styled like its siblings. */
export function appendMember(text: string, object: JsonObjectSpan, key: string, value: unknown): string {
  const first = object.members[0];
  const colon = first === undefined ? ': ' : text.slice(first.keyEnd, first.value.start);
  return append(text, object, (indent, eol, multiline) => {
    return `${JSON.stringify(key)}${multiline ? colon : colon.trim()}${formatValue(text, value, indent, eol, multiline)}`;
  });
}

/** Inserts an item at the end of an array, styled like its siblings. */
export function appendItem(text: string, array: JsonArraySpan, value: unknown): string {
  return append(text, array, (indent, eol, multiline) => formatValue(text, value, indent, eol, multiline));
}

/** Replaces a value's source with `value`, formatted at the value's own indent. */
export function replaceValue(text: string, span: JsonSpan, value: unknown): string {
  const indent = lineIndent(text, span.start);
  const multiline = text.slice(span.start, span.end).includes('\n') || text.includes('\n');
  return splice(text, span.start, span.end, formatValue(text, value, indent, eolOf(text), multiline));
}

/** Removes child `index` of a container (a member or an item) with the separator that joined it. */
export function removeChild(text: string, container: Container, index: number): string {
  const children = childSpans(container);
  const child = children[index];
  if (child === undefined) return text;
  if (children.length === 1) return splice(text, container.start + 1, container.end - 1, '');
  const previous = children[index - 1];
  const next = children[index + 1];
  // The last child goes with the comma before it, any other with the comma after it.
  if (next === undefined && previous !== undefined) return splice(text, previous.end, child.end, '');
  return splice(text, child.start, (next as { start: number }).start, '');
}

function childSpans(container: Container): { start: number; end: number }[] {
  return container.kind === 'object'
    ? container.members.map((member) => ({ start: member.start, end: member.value.end }))
    : container.items;
}

/**
 * Appends a child: after the last one with a comma and the separator the last two are joined by (or
 * the whitespace before the first, when there is one child); into an empty container on lines of its
 * own when the file is laid out on lines, else inline.
 */
function append(
  text: string,
  container: Container,
  render: (indent: string, eol: string, multiline: boolean) => string,
): string {
  const children = childSpans(container);
  const last = children.at(-1);
  const eol = eolOf(text);
  if (last === undefined) {
    const outer = lineIndent(text, container.start);
    if (!text.includes('\n'))
      return splice(text, container.start + 1, container.end - 1, render('', eol, false));
    const inner = outer + indentUnit(text);
    return splice(
      text,
      container.start + 1,
      container.end - 1,
      `${eol}${inner}${render(inner, eol, true)}${eol}${outer}`,
    );
  }
  const beforeLast = children.at(-2);
  const separator =
    beforeLast === undefined
      ? text.slice(container.start + 1, last.start)
      : text.slice(text.indexOf(',', beforeLast.end) + 1, last.start);
  const multiline = separator.includes('\n');
  const indent = multiline ? separator.slice(separator.lastIndexOf('\n') + 1) : '';
  return splice(text, last.end, last.end, `,${separator}${render(indent, eol, multiline)}`);
}

function formatValue(text: string, value: unknown, indent: string, eol: string, multiline: boolean): string {
  if (!multiline) return JSON.stringify(value);
  return JSON.stringify(value, null, indentUnit(text)).split('\n').join(`${eol}${indent}`);
}

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end);
}

/** The whitespace that starts the line `offset` is on. */
function lineIndent(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart, offset))?.[0] ?? '';
}

function eolOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/** The file's indent step: the indentation of its first indented line (two spaces when it has none). */
export function indentUnit(text: string): string {
  const match = /\n([ \t]+)\S/.exec(text);
  return match?.[1] ?? '  ';
}
