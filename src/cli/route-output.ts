import { EXIT_CODES } from '../core/errors.js';
import { NONE, type RouteDecision } from '../core/route-types.js';

// How `route` prints a decision, whether it was made in process or by a server: kept apart from the
// command's definition so the quick path to a server prints without loading commander.

export const PRINTABLE = ['skill', 'confidence', 'method'] as const;
export type Printable = (typeof PRINTABLE)[number];

/** Prints a decision as `route` does (in process or from a server) and sets the exit code: 10 abstained. */
export function printDecision(
  decision: RouteDecision,
  flags: { json?: boolean | undefined; print?: Printable | undefined },
): void {
  if (flags.print !== undefined) process.stdout.write(`${printedField(decision, flags.print)}\n`);
  else process.stdout.write(flags.json === true ? `${JSON.stringify(decision)}\n` : formatDecision(decision));
  process.exitCode = decision.skill === NONE ? EXIT_CODES.ABSTAINED : EXIT_CODES.OK;
}

/** One word for a shell: `scope=$(switchboard route --print skill "$request")`. */
function printedField(decision: RouteDecision, field: Printable): string {
  if (field === 'skill') return decision.skill;
  if (field === 'method') return decision.method;
  return decision.confidence.toFixed(2);
}

export function formatDecision(decision: RouteDecision): string {
  const head =
    decision.skill === NONE
      ? `none — no skill fits (${decision.method})`
      : `${decision.skill}  confidence ${decision.confidence.toFixed(2)}  via ${decision.method}`;
  const lines = [head, `  reasoning:  ${decision.reasoning}`];
  if (decision.candidates.length > 0) {
    const listed = decision.candidates.map((candidate) => `${candidate.skill} ${candidate.score.toFixed(2)}`);
    lines.push(`  candidates: ${listed.join(' · ')}`);
  }
  const timings = Object.entries(decision.timings).map(([tier, ms]) => `${tier} ${formatMs(ms)}`);
  lines.push(`  time:       ${formatMs(decision.durationMs)} (${timings.join(', ')})`);
  for (const warning of decision.warnings) lines.push(`  warning:    ${warning}`);
  return `${lines.join('\n')}\n`;
}

function formatMs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(1)} ms`;
}
