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

/** A tag that names its file: `{% include 'x' %}`, `{%- extends "y" -%}`: trims, kind, quote, path, expression, trim. */
const FILE_TAG = /\{%([-+]?)\s*(include|extends)\s+(?:(['"])(.*?)\3|([^%]*?))\s*([-+]?)%\}/g;
const BLOCK = /\{%[-+]?\s*block\s+(\w+)\s*[-+]?%\}([\s\S]*?)\{%[-+]?\s*endblock(?:\s+\w+)?\s*[-+]?%\}/g;
const BLOCK_TAG = /\{%[-+]?\s*(?:block\s+\w+|endblock(?:\s+\w+)?)\s*[-+]?%\}/g;
const SUPER = /\{\{[-+]?\s*super\(\)\s*[-+]?\}\}/g;
const HAS_FILE_TAG = /\{%[-+]?\s*(?:include|extends)\b/;

/** Whether a workflow's text may hold a tag that reads a file (its definition is then not cached). */
export function mayReadTemplateFiles(text: string): boolean {
  return HAS_FILE_TAG.test(text);
}

interface Expansion {
  policy: FilePolicy;
  place: ProblemPlace;
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
      return expand(value, { policy, place: placeOf(path) }, []);
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

function expand(text: string, context: Expansion, stack: string[]): string {
  const source = extendsOf(text, context, stack) ?? text;
  let result = '';
  let last = 0;
  for (const match of source.matchAll(FILE_TAG)) {
    const [tag, trimBefore, kind, , quoted, bare, trimAfter] = match;
    if (kind === 'extends') {
      throw problem(context, `${tag} must be the template's first tag`, 'move it to the start');
    }
    const before = source.slice(last, match.index);
    result += trimBefore === '-' ? before.trimEnd() : before;
    result += expand(readTemplate(quoted, bare, tag, context, stack), context, [...stack, quoted ?? '']);
    last = match.index + tag.length;
    // `-%}` trims the whitespace after the tag, as Jinja does.
    if (trimAfter === '-') while (last < source.length && /\s/.test(source[last] ?? '')) last++;
    checkSize(result, context);
  }
  result += source.slice(last);
  checkSize(result, context);
  // Blocks of a template rendered as it is (no child overrides them) are their own text.
  return result.replace(BLOCK_TAG, '');
}

/**
 * A child template (`{% extends 'base' %}` first): the parent's text with each of its blocks replaced
 * by the child's block of that name (`{{ super() }}` in it is the parent's), the child's text outside
 * blocks dropped, as Jinja renders it. Undefined when the text extends nothing.
 */
function extendsOf(text: string, context: Expansion, stack: string[]): string | undefined {
  const first = /^\s*(\{%[-+]?\s*extends\s+(?:(['"])(.*?)\2|([^%]*?))\s*[-+]?%\})/.exec(text);
  if (first === null) return undefined;
  const [, tag = '', , quoted, bare] = first;
  const parent = readTemplate(quoted, bare, tag, context, stack);
  const childBlocks = blocksOf(text.slice(first[0].length), context);
  const base = extendsOf(parent, context, [...stack, quoted ?? '']) ?? parent;
  blocksOf(base, context);
  return base.replace(BLOCK, (_whole, name: string, inner: string) => {
    const own = childBlocks.get(name);
    return own === undefined ? inner : own.replace(SUPER, () => inner);
  });
}

/** The template's blocks by name; a block inside a block is refused (this reader does not nest them). */
function blocksOf(text: string, context: Expansion): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const [, name = '', inner = ''] of text.matchAll(BLOCK)) {
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

function readTemplate(
  quoted: string | undefined,
  bare: string | undefined,
  tag: string,
  context: Expansion,
  stack: string[],
): string {
  if (quoted === undefined || quoted.trim() === '') {
    throw problem(
      context,
      `${tag} names its file with ${bare?.trim() === '' || bare === undefined ? 'nothing' : `an expression (${bare.trim()})`}`,
      "write the path as a quoted string relative to the workflow's folder: {% include 'prompts/part.md' %}",
    );
  }
  if (stack.includes(quoted)) {
    throw problem(
      context,
      `${tag} includes itself (${[...stack, quoted].join(' -> ')})`,
      'remove the circular reference',
    );
  }
  if (stack.length >= MAX_DEPTH) {
    throw problem(
      context,
      `${tag}: templates nest more than ${MAX_DEPTH} files deep`,
      'flatten the templates',
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
  try {
    return readBoundedFile(resolved.real, { kind: `the template ${quoted}:` }).toString('utf8');
  } catch (error) {
    const reason = isSwitchboardError(error) ? error.message : `cannot read ${quoted}`;
    throw problem(context, `${tag}: ${reason}`, 'name a regular text file of at most 2 MiB');
  }
}

function checkSize(text: string, context: Expansion): void {
  if (Buffer.byteLength(text) > MAX_TEXT_BYTES) {
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
