import { readFileSync } from 'node:fs';
import type { JsonSchema } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { NONE, type Skill } from '../../core/route-types.js';

/** The one structured-output request `route prime` sends. */
export interface PrimeRequest {
  system: string;
  prompt: string;
  schema: JsonSchema;
}

/** What the model answers: requests per skill, and near misses that belong to no skill. */
export interface PrimeAnswer {
  examples?: Record<string, string[]>;
  near_misses?: string[];
}

/** The start of a skill's body shown to the model: enough to say what it is for, not its whole manual. */
const BODY_CHARACTERS = 400;

const SYSTEM =
  'You write realistic requests that users send to a request router, as training data for it. Answer only with the requested JSON.';

/**
 * The prompt and schema asking for `perSkill` requests for each skill in `toPrime` and `nearMisses`
 * requests that fit none of `skills`. Every skill is described, primed or not, so that examples and
 * near misses are written against the whole set.
 */
export function primeRequest(
  skills: readonly Skill[],
  toPrime: readonly Skill[],
  perSkill: number,
  nearMisses: number,
): PrimeRequest {
  const listing = skills.map((skill) => {
    const body = skillBody(skill.file);
    return `- ${skill.name}: ${skill.description}${body === '' ? '' : `\n  (${body})`}`;
  });
  const names = toPrime.map((skill) => skill.name);
  const keys = answerKeys(toPrime);
  const aliased = keys.some((key, index) => key !== names[index]);
  const lines = [
    'A router sends free-text requests from users to the skills below. Write training examples for it.',
    '',
    'Skills:',
    ...listing,
    '',
  ];
  if (names.length > 0) {
    lines.push(
      `For each of these skills, write ${perSkill} different requests a user might send that the skill should handle: ${aliased ? keys.map((key, index) => `${key} (${names[index]})`).join(', ') : names.join(', ')}.`,
      'Vary them as real users do: short and long, casual and formal, questions and commands, with and without technical terms, in words other than the description, a few with typos or without punctuation. Do not number them.',
      '',
    );
  }
  if (nearMisses > 0) {
    lines.push(
      `Also write ${nearMisses} near misses: requests that sound close to these skills (same subject or vocabulary) but that none of them should handle.`,
      '',
    );
  }
  const fields = [
    ...(names.length > 0
      ? [`"examples" maps each of those skill ${aliased ? 'keys' : 'names'} to its list of requests`]
      : []),
    ...(nearMisses > 0 ? ['"near_misses" lists the near misses'] : []),
  ];
  lines.push(`Answer with JSON: ${fields.join('; ')}.`);
  return { system: SYSTEM, prompt: lines.join('\n'), schema: primeSchema(keys, nearMisses > 0) };
}

/** What the Anthropic API accepts as property names in a tool's input schema. */
const SAFE_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The answer's key for each skill asked for: its name, or `s1`, `s2`, … for all of them when any name
 * could not be a schema property name (spaces, other scripts, over 64 characters).
 */
export function answerKeys(toPrime: readonly Skill[]): string[] {
  return toPrime.every((skill) => SAFE_KEY.test(skill.name))
    ? toPrime.map((skill) => skill.name)
    : toPrime.map((_, index) => `s${index + 1}`);
}

function primeSchema(names: readonly string[], nearMisses: boolean): JsonSchema {
  const requests = { type: 'array', items: { type: 'string' }, minItems: 1 };
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  if (names.length > 0) {
    properties['examples'] = {
      type: 'object',
      properties: Object.fromEntries(names.map((name) => [name, requests])),
      required: [...names],
      additionalProperties: false,
    };
    required.push('examples');
  }
  if (nearMisses) {
    properties['near_misses'] = requests;
    required.push('near_misses');
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

/**
 * The requests of a valid answer, by skill (`none` for near misses): trimmed, blank and repeated ones
 * dropped, at most as many as were asked for. A near miss that repeats a skill's request is dropped too:
 * the model contradicted itself. A skill left with nothing is a SCHEMA error, so nothing is written.
 */
export function answerRows(
  answer: PrimeAnswer,
  toPrime: readonly Skill[],
  perSkill: number,
  nearMisses: number,
): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  const claimed = new Set<string>();
  const keys = answerKeys(toPrime);
  for (const [index, skill] of toPrime.entries()) {
    const texts = distinct(answer.examples?.[keys[index] as string] ?? [], new Set()).slice(0, perSkill);
    if (texts.length === 0) throw emptyAnswer(skill.name);
    for (const text of texts) claimed.add(text.toLowerCase());
    rows.set(skill.name, texts);
  }
  if (nearMisses > 0) {
    const texts = distinct(answer.near_misses ?? [], claimed).slice(0, nearMisses);
    if (texts.length === 0) throw emptyAnswer('near misses');
    rows.set(NONE, texts);
  }
  return rows;
}

function distinct(texts: readonly string[], excluded: ReadonlySet<string>): string[] {
  const seen = new Set(excluded);
  const kept: string[] = [];
  for (const raw of texts) {
    const text = raw.replace(/\s+/g, ' ').trim();
    const key = text.toLowerCase();
    if (text === '' || seen.has(key)) continue;
    seen.add(key);
    kept.push(text);
  }
  return kept;
}

function emptyAnswer(what: string): SwitchboardError {
  return new SwitchboardError('SCHEMA', `the model wrote no usable requests for ${what}`, {
    hint: 'run `switchboard route prime` again, or with another --provider; the examples file was left as it was',
    retryable: false,
  });
}

/** The markdown after a skill's front matter, whitespace collapsed and cut to a few hundred characters. */
function skillBody(file: string): string {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch {
    return '';
  }
  const body = content
    .replace(/^\uFEFF?---[ \t]*\r?\n/, '')
    .split(/^(?:---|\.\.\.)[ \t]*\r?$/m)
    .slice(1)
    .join('---')
    .replace(/\s+/g, ' ')
    .trim();
  return body.length > BODY_CHARACTERS ? `${body.slice(0, BODY_CHARACTERS)}…` : body;
}
