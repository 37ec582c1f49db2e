import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument, type Document, type ScalarTag } from 'yaml';
import { readBoundedFile, syntaxErrorWithoutContent } from '../../core/bounded-file.js';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { workflowInvalid } from './problem.js';

/** A parsed workflow file: its plain data and a way back from a key path to `line:col`. */
export interface YamlSource {
  data: unknown;
  /** `line:col` of the node at `path` in the top file, when it exists there. */
  positionOf(path: ReadonlyArray<string | number>): string | undefined;
}

/**
 * Parses YAML text as Conductor's loader does: `!file path` inlines another file (parsed when it is
 * a YAML mapping or list, text otherwise; relative to the file that names it), and a syntax error
 * names `file:line:col`.
 */
export function parseYamlSource(text: string, file: string): YamlSource {
  const lineCounter = new LineCounter();
  const includeFailures: Error[] = [];
  const document = parseDocument(text, {
    lineCounter,
    customTags: [fileTag(dirname(file), [resolve(file)], file, includeFailures)],
    prettyErrors: false,
    uniqueKeys: true,
  });
  if (includeFailures[0] !== undefined) throw includeFailures[0];
  const problem =
    document.errors[0] ?? document.warnings.find((warning) => warning.code === 'TAG_RESOLVE_FAILED');
  if (problem !== undefined) {
    const position = lineCounter.linePos(problem.pos[0]);
    throw workflowInvalid(
      { file, position: `${position.line}:${position.col}` },
      `not valid YAML: ${syntaxErrorWithoutContent(problem)}`,
      'fix the YAML at the position shown (indentation, a missing ":", an unquoted "{{" or ":")',
    );
  }
  const data = toData(document, file);
  return {
    data,
    positionOf(path) {
      const node = document.getIn(path, true) as { range?: [number, number, number] } | undefined;
      const offset = node?.range?.[0];
      if (offset === undefined) return undefined;
      const { line, col } = lineCounter.linePos(offset);
      return `${line}:${col}`;
    },
  };
}

function toData(document: Document, file: string): unknown {
  try {
    return document.toJS({ maxAliasCount: 1000 });
  } catch (error) {
    if (error instanceof Error && error.name === 'SwitchboardError') throw error;
    throw workflowInvalid(
      { file },
      `not valid YAML: ${error instanceof Error ? error.message : String(error)}`,
      'fix the YAML (aliases, anchors)',
    );
  }
}

/** `!file path`: read relative to `baseDir`; a cycle of includes is an error naming the chain. */
function fileTag(baseDir: string, stack: string[], topFile: string, failures: Error[]): ScalarTag {
  return {
    tag: '!file',
    resolve(value: string): unknown {
      const target = resolve(baseDir, value);
      if (stack.includes(target)) {
        return fail(
          failures,
          workflowInvalid(
            { file: topFile },
            `!file ${value} includes itself (${[...stack, target].join(' -> ')})`,
            'remove the circular !file reference',
          ),
        );
      }
      let content: string;
      try {
        content = readBoundedFile(target, { kind: `the !file ${value}:` }).toString('utf8');
      } catch (error) {
        if (isSwitchboardError(error)) return fail(failures, workflowInvalidFrom(topFile, error));
        return fail(
          failures,
          workflowInvalid(
            { file: topFile },
            `!file ${value}: cannot read ${target}`,
            'a !file path is relative to the YAML file that names it; check it exists',
          ),
        );
      }
      const nested = parseDocument(content, {
        customTags: [fileTag(dirname(target), [...stack, target], topFile, failures)],
      });
      if (nested.errors.length > 0) return content;
      const parsed: unknown = nested.toJS();
      return typeof parsed === 'object' && parsed !== null ? parsed : content;
    },
  };
}

/** A refused include (a FIFO, a device, too large) keeps its code, reported against the top file. */
function workflowInvalidFrom(topFile: string, error: SwitchboardError): Error {
  return new SwitchboardError(error.code, `${topFile}: ${error.message}`, {
    hint: 'a !file path must name a regular file of at most 2 MiB',
  });
}

/** The YAML library turns a throwing tag into a generic warning; keep ours and raise it after parsing. */
function fail(failures: Error[], error: Error): string {
  failures.push(error);
  return '';
}
