import { readDataFile } from '../../core/data-file.js';
import { SwitchboardError } from '../../core/errors.js';
import { NONE, type Skill } from '../../core/route-types.js';
import { compilePattern, regexProblem } from '../skills.js';
import type { RouteTier, TierInput, TierVerdict } from '../tier.js';
import type { LinearRegex } from '../../core/linear-regex.js';

/** Confidence of a pattern taken from a skill's front matter. */
export const DEFAULT_RULE_CONFIDENCE = 0.95;

export interface RouteRule {
  /** Regex source (case-insensitive) or `/source/flags`. */
  pattern: string;
  /** The skill to route to, or `none` to refuse such requests. */
  skill: string;
  /** @default 0.95 */
  confidence?: number;
}

interface CompiledRule {
  regex: LinearRegex;
  skill: string;
  confidence: number;
  source: string;
  origin: string;
}

/**
 * Ordered regex rules, first match wins: the rules file's rules first (they are the user's explicit
 * overrides), then each skill's `patterns` in skill order.
 */
export class RulesTier implements RouteTier {
  readonly method = 'rules' as const;
  private readonly rules: CompiledRule[];

  constructor(skills: readonly Skill[], extraRules: readonly RouteRule[] = [], rulesOrigin = 'rules') {
    const known = new Set(skills.map((skill) => skill.name));
    this.rules = [];
    for (const [index, rule] of extraRules.entries()) {
      const where = `${rulesOrigin} rule ${index + 1}`;
      if (rule.skill !== NONE && !known.has(rule.skill)) {
        throw new SwitchboardError('CONFIG_INVALID', `${where} routes to unknown skill "${rule.skill}"`, {
          hint: `use one of: ${[...known].join(', ')}, or ${NONE}`,
        });
      }
      this.rules.push(
        compileRule(rule.pattern, rule.skill, rule.confidence ?? DEFAULT_RULE_CONFIDENCE, where),
      );
    }
    for (const skill of skills) {
      for (const pattern of skill.patterns) {
        this.rules.push(compileRule(pattern, skill.name, DEFAULT_RULE_CONFIDENCE, `skill ${skill.name}`));
      }
    }
  }

  get size(): number {
    return this.rules.length;
  }

  decide({ text }: TierInput): TierVerdict | undefined {
    for (const rule of this.rules) {
      if (rule.regex.test(text)) {
        return {
          skill: rule.skill,
          confidence: rule.confidence,
          reasoning: `matched /${rule.source}/ (${rule.origin})`,
          candidates: [{ skill: rule.skill, score: rule.confidence }],
          ...(rule.skill === NONE ? { final: true } : {}),
        };
      }
    }
    return undefined;
  }
}

function compileRule(pattern: string, skill: string, confidence: number, origin: string): CompiledRule {
  const problem = regexProblem(pattern);
  if (problem !== undefined) {
    throw new SwitchboardError(
      'CONFIG_INVALID',
      `${origin}: pattern ${JSON.stringify(pattern)} is invalid: ${problem}`,
      {
        hint: 'fix the regular expression',
      },
    );
  }
  if (!(confidence >= 0 && confidence <= 1)) {
    throw new SwitchboardError('CONFIG_INVALID', `${origin}: confidence must be between 0 and 1`);
  }
  // RE2 keeps no state between tests (a global JavaScript regex would): routing never depends on history.
  const regex = compilePattern(pattern);
  return { regex, skill, confidence, source: regex.source, origin };
}

/** Reads a rules file: YAML or JSON, a list of `{pattern, skill, confidence?}` (or `{rules: [...]}`). */
export function loadRulesFile(file: string): RouteRule[] {
  const data = readDataFile(file, {
    code: 'CONFIG_INVALID',
    kind: 'rules file',
    readHint: 'check the rules_file path in switchboard.yaml or --rules',
    syntaxHint: 'write a list of {pattern, skill, confidence} entries',
  });
  const list = Array.isArray(data) ? data : (data as { rules?: unknown } | null)?.rules;
  if (!Array.isArray(list)) {
    throw new SwitchboardError('CONFIG_INVALID', `rules file ${file} must hold a list of rules`, {
      hint: 'write a list of {pattern, skill, confidence} entries',
    });
  }
  return list.map((entry: unknown, index) => {
    const rule = entry as Partial<RouteRule> | null;
    if (typeof rule?.pattern !== 'string' || typeof rule.skill !== 'string') {
      throw new SwitchboardError(
        'CONFIG_INVALID',
        `rules file ${file}: rule ${index + 1} needs "pattern" and "skill"`,
      );
    }
    if (rule.confidence !== undefined && typeof rule.confidence !== 'number') {
      throw new SwitchboardError(
        'CONFIG_INVALID',
        `rules file ${file}: rule ${index + 1} "confidence" must be a number`,
      );
    }
    const result: RouteRule = { pattern: rule.pattern, skill: rule.skill };
    if (rule.confidence !== undefined) result.confidence = rule.confidence;
    return result;
  });
}
