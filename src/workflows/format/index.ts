import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { readBoundedFile } from '../../core/bounded-file.js';
import { isSwitchboardError } from '../../core/errors.js';
import type { WorkflowDefinition } from '../model.js';
import { buildWorkflow } from './build.js';
import { cachedDefinition, recordingEnvironment, rememberDefinition } from './definition-cache.js';
import { writtenAt } from './build-context.js';
import { dotted, substituteEnv } from './env-vars.js';
import { workflowInvalid, type ProblemPlace } from './problem.js';
import { workflowFileSchema } from './schema.js';
import { expandTemplateFiles, mayReadTemplateFiles } from './template-files.js';
import { parseYamlSource, type YamlSource } from './yaml-source.js';

export { validateWorkflow, type Problem, type ValidationReport } from './validate.js';

/** Options for reading a workflow file. */
export interface ParseWorkflowOptions {
  /** Where `${VAR}` references are looked up. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/**
 * Reads a Conductor-format workflow file into the model the engine runs. Every problem is a
 * `WORKFLOW_INVALID` SwitchboardError with a one-line message naming the file, the step and the field,
 * and the fix in `hint`; keys Switchboard does not act on are listed in `warnings`.
 */
export function loadWorkflow(file: string, options: ParseWorkflowOptions = {}): WorkflowDefinition {
  const absolute = resolve(file);
  let bytes: Buffer;
  try {
    bytes = readBoundedFile(absolute, { kind: 'workflow file' });
  } catch (error) {
    if (isSwitchboardError(error)) throw error;
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw workflowInvalid(
      { file },
      missing ? 'no such workflow file' : `cannot read the workflow file (${(error as Error).message})`,
      missing ? 'check the path' : "check the file's permissions",
    );
  }
  return parseWorkflowBytes(bytes, absolute, options);
}

/** `loadWorkflow` for text already in hand; `file` names it in messages and anchors relative paths. */
export function parseWorkflow(
  text: string,
  file: string,
  options: ParseWorkflowOptions = {},
): WorkflowDefinition {
  return parseWorkflowBytes(Buffer.from(text, 'utf8'), resolve(file), options);
}

function parseWorkflowBytes(bytes: Buffer, file: string, options: ParseWorkflowOptions): WorkflowDefinition {
  const hash = createHash('sha256').update(bytes).digest('hex');
  const text = bytes.toString('utf8');
  const env = options.env ?? process.env;
  // An included file may change while the top file does not: such definitions are read every time.
  const keep = !text.includes('!file') && !mayReadTemplateFiles(text);
  const cached = keep ? cachedDefinition(file, hash, env) : undefined;
  if (cached !== undefined) return cached;
  const recording = recordingEnvironment(env);
  const definition = buildDefinition(text, file, hash, recording.env);
  if (keep) rememberDefinition(file, hash, recording.read, definition);
  return definition;
}

function buildDefinition(
  text: string,
  file: string,
  hash: string,
  env: NodeJS.ProcessEnv,
): WorkflowDefinition {
  const source = parseYamlSource(text, file);
  if (typeof source.data !== 'object' || source.data === null || Array.isArray(source.data)) {
    throw workflowInvalid(
      { file },
      source.data == null ? 'the file is empty' : 'the file is not a mapping of workflow:, agents:, …',
      'start from workflow: {name, entry_point} and agents: [...]',
    );
  }
  const placeOf = (path: Array<string | number>): ProblemPlace => {
    const { step, field } = splitPath(path, source.data);
    const position = source.positionOf(path);
    return {
      file,
      ...(step === undefined ? {} : { step }),
      ...(field === '' ? {} : { field }),
      ...(position === undefined ? {} : { position }),
    };
  };
  const written = expandTemplateFiles(substituteEnv(source.data, placeOf, env), file, placeOf) as Record<
    string,
    unknown
  >;
  const parsed = workflowFileSchema.safeParse(written);
  if (!parsed.success) throw schemaError(parsed.error, written, source, file);
  return buildWorkflow(parsed.data, { file, hash, written, positionOf: source.positionOf });
}

/** The first schema problem as one line: file[:line:col], the step, the field, what is wrong and the fix. */
function schemaError(error: z.ZodError, written: unknown, source: YamlSource, file: string): Error {
  const issue = error.issues[0] as z.core.$ZodIssue;
  const path = [...issue.path] as Array<string | number>;
  const unknownKey = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
  const fullPath = unknownKey === undefined ? path : [...path, unknownKey];
  const { step, field } = splitPath(fullPath, written);
  const position =
    source.positionOf(fullPath) ?? source.positionOf(path) ?? source.positionOf(path.slice(0, -1));
  const place = {
    file,
    ...(step === undefined ? {} : { step }),
    ...(field === '' ? {} : { field }),
    ...(position === undefined ? {} : { position }),
  };
  if (unknownKey !== undefined) {
    return workflowInvalid(
      place,
      `unknown key "${unknownKey}"`,
      "remove it or fix its spelling; Conductor's schema and Switchboard's additions have no such key here",
    );
  }
  return workflowInvalid(place, describeIssue(issue, written, fullPath), hintFor(issue, fullPath));
}

/** What a field that takes several shapes accepts, for messages (zod only says "Invalid input"). */
const SHAPES: Readonly<Record<string, string>> = {
  skills: 'a list of skill names, or (type: route) a skills folder',
  acceptance: 'a string or a list of strings',
  mcp: 'true, or a list of names from runtime.mcp_servers',
  provider: 'a provider name (claude, openai, copilot, …) or a mapping with name:',
  duration: 'a number of seconds or a duration such as 30s, 500ms, 2.5m, 1h',
  plugin_sources: 'a mapping of names to owner/repo or {source, path, plugin}',
};

function describeIssue(issue: z.core.$ZodIssue, written: unknown, path: Array<string | number>): string {
  const key = lastKey(path);
  if (issue.code === 'invalid_type' && valueAt(written, path) === undefined) return 'is required';
  if (issue.code === 'invalid_value') {
    const given = valueAt(written, path);
    const shown =
      typeof given === 'string' || typeof given === 'number' ? `"${String(given)}" is not valid; ` : '';
    return `${shown}must be one of: ${issue.values.map(String).join(', ')}`;
  }
  if (issue.code === 'invalid_union')
    return `must be ${SHAPES[key] ?? 'one of the shapes the format allows'}`;
  if (
    issue.code === 'invalid_type' &&
    issue.expected === 'object' &&
    typeof path[path.length - 1] === 'number'
  ) {
    return 'must be a mapping (name:, prompt:, …)';
  }
  return issue.message.replace(/^Invalid input: /, '');
}

function hintFor(issue: z.core.$ZodIssue, path: Array<string | number>): string {
  const key = lastKey(path);
  if (issue.code === 'invalid_type' && issue.expected === 'array')
    return `write ${key} as a list (- item per line)`;
  if (issue.code === 'invalid_type' && issue.expected === 'object')
    return `write ${key} as a mapping (key: value)`;
  if (issue.code === 'invalid_type') return `give ${key} a ${issue.expected} value`;
  if (issue.code === 'too_big' || issue.code === 'too_small')
    return `give ${key} a value within the bound shown`;
  if (issue.code === 'invalid_value') return `write one of the values listed for ${key}`;
  return `fix ${key} as the message says; docs/workflows.md describes every key`;
}

function lastKey(path: Array<string | number>): string {
  const named = [...path].reverse().find((part) => typeof part === 'string');
  const last = path[path.length - 1];
  return typeof last === 'number' ? `${named ?? 'the'} entry ${last}` : String(named ?? 'the file');
}

function valueAt(data: unknown, path: Array<string | number>): unknown {
  let node: unknown = data;
  for (const part of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[part];
  }
  return node;
}

/** `['agents', 2, 'routes', 0, 'to']` → step `agents[2] "reviewer"`, field `routes[0].to`. */
function splitPath(path: Array<string | number>, written: unknown): { step?: string; field: string } {
  const [head, index] = path;
  if ((head === 'agents' || head === 'parallel' || head === 'for_each') && typeof index === 'number') {
    if (head === 'for_each' && path[2] === 'agent') {
      const agent = writtenAt(written, path.slice(0, 3));
      return {
        step: `${stepLabel(path.slice(0, 2), written)} agent${typeof agent['name'] === 'string' ? ` "${agent['name']}"` : ''}`,
        field: dotted(path.slice(3)),
      };
    }
    return { step: stepLabel(path.slice(0, 2), written), field: dotted(path.slice(2)) };
  }
  if (head === 'workflow') return { step: 'workflow', field: dotted(path.slice(1)) };
  return { field: dotted(path) };
}

function stepLabel(path: Array<string | number>, written: unknown): string {
  const name = writtenAt(written, path)['name'];
  return `${path[0]}[${path[1]}]${typeof name === 'string' ? ` "${name}"` : ''}`;
}
