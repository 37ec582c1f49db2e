import {
  REASONING_EFFORTS,
  reasoningEffortOf,
  type JsonSchema,
  type ReasoningEffort,
} from '../core/call-types.js';
import { SwitchboardError } from '../core/errors.js';
import { isStringRecord, parseJsonObject } from './http.js';

/**
 * The body of `POST /call`: what `switchboard call` takes, as JSON. `spec` is exactly the command's
 * SPEC (a provider, a comma-separated chain, or a role of the server's switchboard.yaml).
 */
export interface CallBody {
  spec: string;
  prompt: string;
  system?: string;
  /** JSON Schema the answer must match. */
  schema?: JsonSchema;
  /** Limit of the whole call (ms); the server caps it at its own `--max-timeout`. */
  timeoutMs?: number;
  /** Limit of each attempt (ms). */
  stageTimeoutMs?: number;
  /** Fail when the provider sends nothing for this long (ms). */
  idleTimeoutMs?: number;
  tags?: Record<string, string>;
  /** The most the call may cost, all attempts together (USD). */
  maxCostUsd?: number;
  /** Re-asks with a diagnosis when the answer breaks the schema (0–10). */
  schemaRetries?: number;
  ignoreCooldown?: boolean;
  /** Store the prompt text in the ledger (default: a hash only). */
  storeText?: boolean;
  /** Think before answering (`CallRequest.reasoning`): low, medium, high, xhigh or max. */
  reasoning?: ReasoningEffort;
}

const EXAMPLE = '{"spec": "claude:haiku", "prompt": "..."}';

function invalid(message: string, hint = `send ${EXAMPLE}`): SwitchboardError {
  return new SwitchboardError('INVALID_INPUT', message, { hint });
}

function positive(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw invalid(`Expected "${name}" to be a positive number`);
  return value;
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`Expected "${name}" to be a string`);
  return value;
}

function flag(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw invalid(`Expected "${name}" to be true or false`);
  return value;
}

function effort(value: unknown, name: string): ReasoningEffort | undefined {
  if (value === undefined) return undefined;
  const level = reasoningEffortOf(value);
  if (level === undefined) throw invalid(`Expected "${name}" to be one of ${REASONING_EFFORTS.join(', ')}`);
  return level;
}

/** Validates a `POST /call` body; every problem is an INVALID_INPUT naming the field. */
export function parseCallBody(body: string): CallBody {
  const value = parseJsonObject(body, EXAMPLE);
  const known = new Set([
    'spec',
    'prompt',
    'system',
    'schema',
    'timeoutMs',
    'stageTimeoutMs',
    'idleTimeoutMs',
    'tags',
    'maxCostUsd',
    'schemaRetries',
    'ignoreCooldown',
    'storeText',
    'reasoning',
  ]);
  const unknown = Object.keys(value).find((key) => !known.has(key));
  if (unknown !== undefined)
    throw invalid(`unknown field "${unknown}"`, `use only: ${[...known].join(', ')}`);
  const spec = text(value['spec'], 'spec');
  const prompt = text(value['prompt'], 'prompt');
  if (spec === undefined || spec.trim() === '') throw invalid('Expected "spec" to be a provider spec');
  if (prompt === undefined) throw invalid('Expected "prompt" to be a string');
  const { schema, tags, schemaRetries } = value;
  if (schema !== undefined && (typeof schema !== 'object' || schema === null || Array.isArray(schema)))
    throw invalid('Expected "schema" to be a JSON Schema object');
  if (tags !== undefined && !isStringRecord(tags))
    throw invalid('Expected "tags" to be an object of strings');
  if (
    schemaRetries !== undefined &&
    (typeof schemaRetries !== 'number' ||
      !Number.isInteger(schemaRetries) ||
      schemaRetries < 0 ||
      schemaRetries > 10)
  )
    throw invalid('Expected "schemaRetries" to be a whole number from 0 to 10');
  const parsed: CallBody = { spec, prompt };
  const optional = {
    system: text(value['system'], 'system'),
    schema: schema as JsonSchema | undefined,
    timeoutMs: positive(value['timeoutMs'], 'timeoutMs'),
    stageTimeoutMs: positive(value['stageTimeoutMs'], 'stageTimeoutMs'),
    idleTimeoutMs: positive(value['idleTimeoutMs'], 'idleTimeoutMs'),
    tags: tags as Record<string, string> | undefined,
    maxCostUsd: positive(value['maxCostUsd'], 'maxCostUsd'),
    schemaRetries: schemaRetries as number | undefined,
    ignoreCooldown: flag(value['ignoreCooldown'], 'ignoreCooldown'),
    storeText: flag(value['storeText'], 'storeText'),
    reasoning: effort(value['reasoning'], 'reasoning'),
  };
  for (const [key, entry] of Object.entries(optional))
    if (entry !== undefined) (parsed as unknown as Record<string, unknown>)[key] = entry;
  return parsed;
}
