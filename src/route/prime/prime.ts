import type { CallRequest, CallResult } from '../../core/call-types.js';
import { parseProviderChain } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import type { ModelPrice } from '../../core/prices.js';
import { NONE, type Skill } from '../../core/route-types.js';
import { estimateCost, ESTIMATED_OUTPUT_TOKENS } from '../../invoke/budget.js';
import type { CallOptions } from '../../invoke/call.js';
import { loadSkills } from '../skills.js';
import {
  currentHash,
  readExamplesFile,
  skillHashes,
  skillSetHash,
  writeExamplesFile,
  type PrimedRow,
} from './examples-file.js';
import { answerRows, primeRequest, type PrimeAnswer, type PrimeRequest } from './prime-request.js';

export interface PrimeOptions {
  /** The skills folder; the examples go to `<skills>/.switchboard-examples.jsonl`. */
  skills: string;
  /** Requests asked for each skill that has none for its current content. @default 25 */
  perSkill?: number;
  /** Near misses (requests no skill should take) asked for when there are none for the current skills. @default 25 */
  nearMisses?: number;
}

/** What `route prime` would do, worked out without asking anything. */
export interface PrimePlan {
  /** The skills folder, as given. */
  directory: string;
  file: string;
  skills: Skill[];
  /** Skills with no rows for their current content: they are asked for. */
  toPrime: Skill[];
  /** Which of `toPrime` have rows for an earlier version (edited since). */
  edited: string[];
  perSkill: number;
  /** Near misses asked for: 0 when current ones exist or none are wanted. */
  nearMisses: number;
  /** Rows that stay as they are. */
  kept: PrimedRow[];
  /** Rows not kept: of removed skills, edited skills (replaced) and stale near misses. */
  dropped: number;
  /** The request to send; undefined when nothing needs asking. */
  request: PrimeRequest | undefined;
  hashes: ReadonlyMap<string, string>;
  setHash: string;
}

const DEFAULT_PER_SKILL = 25;
const MAX_PER_REQUEST_LIST = 200;

/**
 * Works out which skills need examples: those without rows for their current content hash (new or
 * edited skills, or all of whose rows a user deleted). Nothing is asked twice for the same content.
 */
export function planPrime({
  skills: directory,
  perSkill = DEFAULT_PER_SKILL,
  nearMisses,
}: PrimeOptions): PrimePlan {
  checkCount('perSkill', perSkill, 1);
  const wantedNearMisses = nearMisses ?? perSkill;
  checkCount('nearMisses', wantedNearMisses, 0);
  // Every skill file must load: examples written against a partial set (a file with a typo left out)
  // would be near misses of the wrong skills, and the broken skill's rows would be dropped.
  const { skills } = loadSkills(directory, { strict: true });
  const { file, rows, malformedLines } = readExamplesFile(directory);
  if (malformedLines.length > 0) {
    // Rewriting the file would lose those lines: the user fixes them first.
    throw new SwitchboardError(
      'DATASET_INVALID',
      `${file}: line(s) ${malformedLines.join(', ')} are not {"skill", "hash", "text"} rows`,
      { hint: 'fix or delete those lines, then run `switchboard route prime` again' },
    );
  }
  const hashes = skillHashes(skills);
  const setHash = skillSetHash(hashes);
  const isCurrent = (row: PrimedRow) => row.hash === currentHash(row.skill, hashes, setHash);
  const current = new Set(rows.filter(isCurrent).map((row) => row.skill));
  const toPrime = skills.filter((skill) => !current.has(skill.name));
  const stale = new Set(rows.filter((row) => !isCurrent(row)).map((row) => row.skill));
  const askNearMisses = wantedNearMisses > 0 && !current.has(NONE) ? wantedNearMisses : 0;
  // Current rows stay; stale ones go, replaced by the answer (or simply gone: removed skills).
  const kept = rows.filter(isCurrent);
  return {
    directory,
    file,
    skills,
    toPrime,
    edited: toPrime.filter((skill) => stale.has(skill.name)).map((skill) => skill.name),
    perSkill,
    nearMisses: askNearMisses,
    kept,
    dropped: rows.length - kept.length,
    request:
      toPrime.length === 0 && askNearMisses === 0
        ? undefined
        : primeRequest(skills, toPrime, perSkill, askNearMisses),
    hashes,
    setHash,
  };
}

function checkCount(name: string, value: number, minimum: number): void {
  if (!Number.isInteger(value) || value < minimum || value > MAX_PER_REQUEST_LIST) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected "${name}" to be a whole number from ${minimum} to ${MAX_PER_REQUEST_LIST}, got ${value}`,
    );
  }
}

/** Tokens an example request takes in the answer, quotes and separators included (measured: 12–20). */
const TOKENS_PER_EXAMPLE = 20;

/** The estimate shown before asking: the prompt's tokens and the expected answer's, at list prices. */
export interface PrimeEstimate {
  /** The first provider of the chain: the one that answers unless it fails. */
  spec: string;
  inputTokens: number;
  outputTokens: number;
  /** Undefined when the model has no price (a Claude Code subscription, a local server). */
  costUsd: number | undefined;
}

export function estimatePrime(
  plan: PrimePlan,
  provider: string,
  prices?: Readonly<Record<string, ModelPrice>>,
): PrimeEstimate | undefined {
  if (plan.request === undefined) return undefined;
  const [first] = parseProviderChain(provider);
  if (first === undefined) return undefined;
  const { system, prompt, schema } = plan.request;
  // The schema travels with the prompt (as a tool or response format).
  const input = `${prompt}${JSON.stringify(schema)}`;
  const inputTokens = Math.ceil((input.length + system.length) / 4);
  const outputTokens = (plan.toPrime.length * plan.perSkill + plan.nearMisses) * TOKENS_PER_EXAMPLE;
  // estimateCost prices a fixed answer length; its cost of an empty prompt is that answer alone, which
  // gives the output price per token under the same model aliases and price overrides.
  const withFixedAnswer = estimateCost(first.model, input, system, prices);
  const fixedAnswer = estimateCost(first.model, '', '', prices);
  const costUsd =
    withFixedAnswer === undefined || fixedAnswer === undefined
      ? undefined
      : withFixedAnswer + (fixedAnswer / ESTIMATED_OUTPUT_TOKENS) * (outputTokens - ESTIMATED_OUTPUT_TOKENS);
  return { spec: first.text, inputTokens, outputTokens, costUsd };
}

/** How `runPrime` reaches the LLM: `call()` or a caller's own (bound to a run, a budget). */
export type PrimeCall = (spec: string, request: CallRequest, options?: CallOptions) => Promise<CallResult>;

export interface PrimeOutcome {
  file: string;
  /** Requests written per skill name (`none`: near misses). */
  written: Record<string, number>;
  /** Rows in the file now. */
  rows: number;
  dropped: number;
  /** What the call cost (recorded in the ledger by `call()`); null when unknown; 0 when nothing was asked. */
  costUsd: number | null;
  /** The provider that answered. */
  provider: string | undefined;
}

/**
 * Asks the LLM once for what the plan needs, then writes the examples file whole: the rows kept plus
 * the answer's. A failed call or an answer that breaks the schema throws before anything is written,
 * so the file stays byte for byte as it was.
 */
export async function runPrime(
  plan: PrimePlan,
  {
    provider,
    call,
    callOptions = {},
    abortSignal,
  }: { provider: string; call: PrimeCall; callOptions?: CallOptions; abortSignal?: AbortSignal },
): Promise<PrimeOutcome> {
  const rows: PrimedRow[] = [...plan.kept];
  const written: Record<string, number> = {};
  let costUsd: number | null = 0;
  let answeredBy: string | undefined;
  if (plan.request !== undefined) {
    const result = await call(
      provider,
      {
        ...plan.request,
        tags: { purpose: 'route-prime' },
        ...(abortSignal === undefined ? {} : { abortSignal }),
      },
      callOptions,
    );
    costUsd = result.costUsd;
    answeredBy = result.provider;
    const answer = (result.structured ?? {}) as PrimeAnswer;
    for (const [skill, texts] of answerRows(answer, plan.toPrime, plan.perSkill, plan.nearMisses)) {
      const hash = skill === NONE ? plan.setHash : (plan.hashes.get(skill) as string);
      for (const text of texts) rows.push({ skill, hash, text });
      written[skill] = texts.length;
    }
  }
  if (plan.request !== undefined || plan.dropped > 0) writeExamplesFile(plan.directory, rows);
  return {
    file: plan.file,
    written,
    rows: rows.length,
    dropped: plan.dropped,
    costUsd,
    provider: answeredBy,
  };
}
