import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Skill } from '../../core/route-types.js';
import { loadRulesFile, RulesTier } from './rules-tier.js';

const skills: Skill[] = [
  {
    name: 'deploy',
    description: 'd',
    examples: [],
    patterns: ['\\bdeploy\\b', '\\bship it\\b'],
    file: 'd.md',
  },
  { name: 'fix', description: 'f', examples: [], patterns: ['/\\bbug\\b/g'], file: 'f.md' },
];
const input = (text: string) => ({ text, normalized: text.toLowerCase(), candidates: [] });

describe('RulesTier', () => {
  it('routes on the first matching pattern, case-insensitively, with the rule confidence', () => {
    const tier = new RulesTier(skills);
    expect(tier.decide(input('Please DEPLOY the bug fix'))).toMatchObject({
      skill: 'deploy',
      confidence: 0.95,
    });
    expect(tier.decide(input('there is a bug'))?.skill).toBe('fix');
    expect(tier.decide(input('hello'))).toBeUndefined();
  });

  it('gives the same answer every time even for a global regex', () => {
    const tier = new RulesTier(skills);
    const results = [1, 2, 3].map(() => tier.decide(input('a bug'))?.skill);
    expect(results).toEqual(['fix', 'fix', 'fix']);
  });

  it('checks rules-file rules first, and they may refuse a request', () => {
    const tier = new RulesTier(skills, [{ pattern: 'pizza', skill: 'none', confidence: 0.9 }]);
    expect(tier.decide(input('deploy a pizza'))).toMatchObject({ skill: 'none', confidence: 0.9 });
  });

  it('rejects a rule for an unknown skill or with a broken regex', () => {
    expect(() => new RulesTier(skills, [{ pattern: 'x', skill: 'ghost' }])).toThrow(/unknown skill "ghost"/);
    expect(() => new RulesTier(skills, [{ pattern: '(', skill: 'fix' }])).toThrow(/invalid/);
  });
});

describe('loadRulesFile', () => {
  it('reads a YAML list and reports a malformed file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-rules-'));
    const good = join(dir, 'rules.yaml');
    writeFileSync(good, '- pattern: weather\n  skill: none\n  confidence: 0.99\n');
    expect(loadRulesFile(good)).toEqual([{ pattern: 'weather', skill: 'none', confidence: 0.99 }]);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'rules: {pattern: [\n');
    expect(() => loadRulesFile(bad)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => loadRulesFile(join(dir, 'missing.yaml'))).toThrow(/cannot be read/);
  });
});

describe('RulesTier patterns run in linear time', () => {
  it('a catastrophic rule answers a hostile request at once; a backreference is refused when the rules load', () => {
    const tier = new RulesTier(skills, [{ pattern: '^(a|a)+$', skill: 'deploy' }]);
    const started = performance.now();
    expect(tier.decide(input(`${'a'.repeat(40)}!`))).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(tier.decide(input('aaaa'))?.skill).toBe('deploy');
    expect(() => new RulesTier(skills, [{ pattern: '(deploy) \\1', skill: 'deploy' }])).toThrow(
      'rules rule 1: pattern "(deploy) \\\\1" is invalid: the backreference \\1 is not supported',
    );
  });
});
