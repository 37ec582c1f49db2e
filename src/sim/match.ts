import type { SimRequestView } from './request.js';
import type { ScenarioRule } from './scenario.js';

/** Compiled match patterns: a scenario with thousands of rules is matched on every request. */
const compiledPatterns = new Map<string, RegExp>();

function pattern(source: string): RegExp {
  let compiled = compiledPatterns.get(source);
  if (compiled === undefined) {
    if (compiledPatterns.size >= 50_000) compiledPatterns.clear();
    compiledPatterns.set(source, (compiled = new RegExp(source, 'i')));
  }
  return compiled;
}

/** Whether the rule's `match` accepts the request (its `times` and `after` are the server's to count). */
export function ruleMatches(rule: ScenarioRule, view: SimRequestView): boolean {
  const { match } = rule;
  if (match.provider !== undefined && match.provider !== view.provider) return false;
  if (match.wire !== undefined && match.wire !== view.wire) return false;
  if (match.model !== undefined && !pattern(match.model).test(view.model)) return false;
  if (match.text !== undefined && !pattern(match.text).test(view.text)) return false;
  if (match.system !== undefined && !pattern(match.system).test(view.system)) return false;
  if (match.turn !== undefined && match.turn !== view.turn) return false;
  if (match.stream !== undefined && match.stream !== view.stream) return false;
  if (match.tools === true && view.tools.length === 0) return false;
  if (match.tools === false && view.tools.length > 0) return false;
  if (typeof match.tools === 'string') {
    const tools = pattern(match.tools);
    if (!view.tools.some((name) => tools.test(name))) return false;
  }
  return true;
}
