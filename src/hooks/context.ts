import { NONE, type RouteDecision, type Skill } from '../core/route-types.js';

/** The event name Claude Code expects back in `hookSpecificOutput`. */
const EVENT = 'UserPromptSubmit';

/**
 * The hook's answer for a routed prompt: Claude Code's documented UserPromptSubmit output, whose
 * `additionalContext` it adds to the model's context beside the prompt. Undefined when the router
 * abstained or was not sure enough: the prompt then goes on as the user wrote it.
 */
export function hookOutput(
  decision: RouteDecision,
  skill: Pick<Skill, 'description' | 'file'> | undefined,
  minConfidence: number,
): string | undefined {
  if (decision.skill === NONE || decision.confidence < minConfidence) return undefined;
  const lines = [
    `Switchboard routed this request to the skill "${decision.skill}" (confidence ${decision.confidence.toFixed(2)}, via ${decision.method}).`,
  ];
  if (skill !== undefined) {
    lines.push(`${decision.skill}: ${skill.description}`);
    lines.push(`Its instructions are in ${skill.file}; follow them for this request.`);
  } else {
    lines.push(`Use the ${decision.skill} skill for this request.`);
  }
  return `${JSON.stringify({ hookSpecificOutput: { hookEventName: EVENT, additionalContext: lines.join('\n') } })}\n`;
}
