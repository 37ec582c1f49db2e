import { dirname } from 'node:path';
import { readBoundedFile } from '../../core/bounded-file.js';
import { isSwitchboardError } from '../../core/errors.js';
import { FilePolicy } from '../tools/file-policy.js';
import { workflowInvalid, type ProblemPlace } from './problem.js';

/**
 * Jinja's `{% include %}` and `{% extends %}` in a workflow's templates, as Conductor's loader reads
 * them (a file system loader on the workflow's folder): the files are read when the workflow loads and
 * their text takes the tag's place, so a run renders one template and reads no file. Bounded like
 * the rest: a literal path inside the workflow's folder that the one file policy lets through (no
 * `.env`, no credentials, no state folder), at most `MAX_DEPTH` files deep, `MAX_TEXT_BYTES` in all.
 * `{% import %}` and `{% from %}` (macros from another file) stay unsupported (template.ts says so).
 */

/** Files within files. */
const MAX_DEPTH = 10;
/** A field's text once every file is in. */
const MAX_TEXT_BYTES = 2 * 1024 * 1024;
/** Files a field may read in all: a file included ten times from ten files is read once, not 10^10 times. */
const MAX_READS = 100;

/** A tag that names its file: `{% include 'x' %}`, `{%- extends "y" -%}`: trims, kind, quote, path, expression, trim. */
const FILE_TAG = /\{%([-+]?)\s*(include|extends)\s+(?:(['"])(.*?)\3|([^%]*?))\s*([-+]?)%\}/g;
const BLOCK = /\{%[-+]?\s*block\s+(\w+)\s*[-+]?%\}([\s\S]*?)\{%[-+]?\s*endblock(?:\s+\w+)?\s*[-+]?%\}/g;
const BLOCK_TAG = /\{%[-+]?\s*(?:block\s+\w+|endblock(?:\s+\w+)?)\s*[-+]?%\}/g;
const SUPER = /\{\{[-+]?\s*super\(\)\s*[-+]?\}\}/g;
const HAS_FILE_TAG = /\{%[-+]?\s*(?:include|extends)\b/;
/** Where a tag is only text to Jinja: an expression (a string literal in it), a comment, a raw block. */
const INERT =
  /\{\{[\s\S]*?\}\}|\{#[\s\S]*?#\}|\{%[-+]?\s*raw\s*[-+]?%\}[\s\S]*?\{%[-+]?\s*endraw\s*[-+]?%\}/g;

/** Whether a workflow's text may hold a tag that reads a file (its definition is then not cached). */
export function mayReadTemplateFiles(text: string): boolean {
  return HAS_FILE_TAG.test(text);
}

interface Expansion {
  policy: FilePolicy;
  place: ProblemPlace;
  /** Each file's text by where it really is, read once per field. */
  files: Map<string, string>;
}

/**
 * `data` with every string's `{% include %}` / `{% extends %}` replaced by the files' text. `placeOf`
 * names the field in an error (WORKFLOW_INVALID, exit 50).
 */
export function expandTemplateFiles(
  data: unknown,
  file: string,
  placeOf: (path: Array<string | number>) => ProblemPlace,
): unknown {
  let policy: FilePolicy | undefined;
  const walk = (value: unknown, path: Array<string | number>): unknown => {
    if (typeof value === 'string') {
      if (!HAS_FILE_TAG.test(value)) return value;
      policy ??= new FilePolicy(dirname(file), []);
      return stripBlocks(expand(value, { policy, place: placeOf(path), files: new Map() }, []));
    }
    if (Array.isArray(value)) return value.map((item, index) => walk(item, [...path, index]));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [key, walk(item, [...path, key])]),
      );
    }
    return value;
  };
  return walk(data, []);
}

/** The tags of `pattern` in `text` that Jinja reads as tags (not inside an expression, comment or raw block). */
function liveMatches(text: string, pattern: RegExp): RegExpExecArray[] {
  const inert = [...text.matchAll(INERT)].map((match) => [match.index, match.index + match[0].length]);
  return [...text.matchAll(pattern)].filter(
    (match) => !inert.some(([from = 0, to = 0]) => match.index >= from && match.index < to),
  );
}

/** A template's text with its includes in and, when it extends another, merged into it (blocks kept). */
function expand(text: string, context: Expansion, stack: readonly string[]): string {
  const source = extendsOf(text, context, stack) ?? text;
  let result = '';
  let last = 0;
  for (const match of liveMatches(source, FILE_TAG)) {
    const [tag, trimBefore, kind, , quoted, bare, trimAfter] = match;
    if (kind === 'extends') {
      throw problem(context, `${tag} must be the template's first tag`, 'move it to the start');
    }
    const before = source.slice(last, match.index);
    result += trimBefore === '-' ? before.trimEnd() : before;
    // An included file's blocks are its own text: a child template cannot override them through it.
    result += stripBlocks(template(quoted, bare, tag, context, stack));
    last = match.index + tag.length;
    // `-%}` trims the whitespace after the tag, as Jinja does.
    if (trimAfter === '-') while (last < source.length && /\s/.test(source[last] ?? '')) last++;
    checkSize(result.length, context);
  }
  result += source.slice(last);
  checkSize(result.length, context);
  return result;
}

/** Blocks of a template rendered as it is (no child overrides them) are their own text. */
function stripBlocks(text: string): string {
  return text.replace(BLOCK_TAG, '');
}

/**
 * A child template (`{% extends 'base' %}` first): the parent's text with each of its blocks replaced
 * by the child's block of that name (`{{ super() }}` in it is the parent's), the child's text outside
 * blocks dropped, as Jinja renders it. The blocks stay marked, so a grandchild can override them in
 * turn. Undefined when the text extends nothing.
 */
function extendsOf(text: string, context: Expansion, stack: readonly string[]): string | undefined {
  const first = /^\s*(\{%[-+]?\s*extends\s+(?:(['"])(.*?)\2|([^%]*?))\s*[-+]?%\})/.exec(text);
  if (first === null) return undefined;
  const [, tag = '', , quoted, bare] = first;
  const base = template(quoted, bare, tag, context, stack);
  const childBlocks = blocksOf(text.slice(first[0].length), context);
  blocksOf(base, context);
  let size = base.length;
  const merged = base.replace(BLOCK, (whole, name: string, inner: string) => {
    const own = childBlocks.get(name);
    if (own === undefined) return whole;
    // Each super() is the parent's block again: counted before it is made.
    size += own.length + inner.length * (own.match(SUPER)?.length ?? 0) - inner.length;
    checkSize(size, context);
    return `{% block ${name} %}${own.replace(SUPER, () => inner)}{% endblock %}`;
  });
  checkSize(merged.length, context);
  return merged;
}

/** The template's blocks by name; a block inside a block is refused (this reader does not nest them). */
function blocksOf(text: string, context: Expansion): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const [, name = '', inner = ''] of liveMatches(text, BLOCK)) {
    if (/\{%[-+]?\s*block\b/.test(inner)) {
      throw problem(
        context,
        `{% block ${name} %} holds another block; nested blocks are not supported`,
        'write the blocks one after another',
      );
    }
    blocks.set(name, inner);
  }
  return blocks;
}

/**
 * The expanded text of the file a tag names: checked by the one file policy, read once per field
 * (by where it really is), at most `MAX_DEPTH` deep and `MAX_READS` files in all.
 */
function template(
  quoted: string | undefined,
  bare: string | undefined,
  tag: string,
  context: Expansion,
  stack: readonly string[],
): string {
  if (quoted === undefined || quoted.trim() === '') {
    throw problem(
      context,
      `${tag} names its file with ${bare?.trim() === '' || bare === undefined ? 'nothing' : `an expression (${bare.trim()})`}`,
      "write the path as a quoted string relative to the workflow's folder: {% include 'prompts/part.md' %}",
    );
  }
  const resolved = context.policy.resolveSync(quoted);
  if (!resolved.ok) {
    throw problem(
      context,
      `${tag}: ${resolved.reason}`,
      "a template's file is relative to the workflow's folder and inside it",
    );
  }
  const names = [...stack, resolved.relative];
  if (stack.includes(resolved.relative)) {
    throw problem(context, `${tag} includes itself (${names.join(' -> ')})`, 'remove the circular reference');
  }
  if (stack.length >= MAX_DEPTH) {
    throw problem(
      context,
      `${tag}: templates nest more than ${MAX_DEPTH} files deep`,
      'flatten the templates',
    );
  }
  const known = context.files.get(resolved.real);
  if (known !== undefined) return known;
  if (context.files.size >= MAX_READS) {
    throw problem(context, `${tag}: the template reads more than ${MAX_READS} files`, 'include fewer files');
  }
  let text: string;
  try {
    text = readBoundedFile(resolved.real, { kind: `the template ${quoted}:` }).toString('utf8');
  } catch (error) {
    const reason = isSwitchboardError(error) ? error.message : `cannot read ${quoted}`;
    throw problem(context, `${tag}: ${reason}`, 'name a regular text file of at most 2 MiB');
  }
  const expanded = expand(text, context, names);
  context.files.set(resolved.real, expanded);
  return expanded;
}

function checkSize(length: number, context: Expansion): void {
  if (length > MAX_TEXT_BYTES) {
    throw problem(
      context,
      `the template is over ${MAX_TEXT_BYTES / 1024 / 1024} MiB once its files are in`,
      'include less, or split the prompt',
    );
  }
}

function problem(context: Expansion, message: string, hint: string): Error {
  return workflowInvalid(context.place, message, hint);
}
