import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { NONE, type LabelledExample } from '../core/route-types.js';
import { writeFileAtomically } from '../store/atomic-file.js';
import type { Ledger } from '../store/ledger.js';

/** The labelled examples `switchboard route learn` writes, and every later router trains on. */
export const LEARNED_FILE = 'learned.jsonl';

export function learnedFilePath(stateDir: string): string {
  return join(stateDir, LEARNED_FILE);
}

export interface LearnedExamples {
  examples: LabelledExample[];
  fromLlm: number;
  fromFeedback: number;
  /** Decisions that would have taught something but have no stored text (`ledger.store_text` off). */
  withoutText: number;
}

/**
 * Turns the ledger into training data: confident LLM decisions, and user corrections (which win over
 * anything else said about the same request). Only decisions whose text was stored can teach.
 */
export async function collectLearnedExamples(
  ledger: Ledger,
  { minConfidence = 0.8 }: { minConfidence?: number } = {},
): Promise<LearnedExamples> {
  const decisions = await ledger.listRouteDecisions({ limit: 1_000_000 });
  const byId = new Map(decisions.map((decision) => [decision.id, decision]));
  // Text → [skill, where it came from]; a correction replaces what the LLM said about the same text.
  const byText = new Map<string, [string, 'llm' | 'feedback']>();
  let withoutText = 0;
  for (const decision of [...decisions].reverse()) {
    if (decision.method !== 'llm' || decision.confidence < minConfidence) continue;
    if (decision.requestText === undefined) {
      withoutText++;
      continue;
    }
    byText.set(decision.requestText, [decision.skill, 'llm']);
  }
  for (const feedback of await ledger.listFeedback()) {
    const decision = byId.get(feedback.decisionId);
    if (decision?.requestText === undefined) {
      withoutText++;
      continue;
    }
    byText.set(decision.requestText, [feedback.skill, 'feedback']);
  }
  const entries = [...byText.entries()];
  const examples = entries.map(([text, [expected]]) => ({ text, expected }));
  const fromFeedback = entries.filter(([, [, source]]) => source === 'feedback').length;
  return { examples, fromLlm: examples.length - fromFeedback, fromFeedback, withoutText };
}

/** Writes the learned examples where routers pick them up (atomically: a reader never sees half a file). */
export function writeLearnedExamples(stateDir: string, examples: readonly LabelledExample[]): string {
  mkdirSync(stateDir, { recursive: true });
  const file = learnedFilePath(stateDir);
  writeFileAtomically(
    file,
    examples.map((example) => JSON.stringify(example)).join('\n') + (examples.length > 0 ? '\n' : ''),
  );
  return file;
}

/** Learned examples whose skill still exists (skills may have been renamed or removed since). */
export function usableLearned(
  examples: readonly LabelledExample[],
  skillNames: ReadonlySet<string>,
): LabelledExample[] {
  return examples.filter((example) => example.expected === NONE || skillNames.has(example.expected));
}

export function hasLearnedExamples(stateDir: string): boolean {
  return existsSync(learnedFilePath(stateDir));
}
