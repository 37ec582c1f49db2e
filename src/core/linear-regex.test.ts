import { describe, expect, it } from 'vitest';
import { linearRegex, linearRegexProblem } from './linear-regex.js';
import { schemaErrors } from './json-schema.js';

// Patterns that take V8's backtracking engine minutes on a few dozen characters.
const CATASTROPHIC = ['^(a|a)+$', '^(a+)+$', '(x+x+)+y', '^(\\w+\\s?)*$'];

describe('linearRegex', () => {
  it('answers catastrophic patterns on hostile text at once', () => {
    const text = `${'a'.repeat(5_000)}!`;
    const started = performance.now();
    for (const pattern of CATASTROPHIC) expect(linearRegex(pattern).test(text)).toBe(false);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(linearRegex('^(a|a)+$').test('aaaa')).toBe(true);
  });

  it('reads JavaScript syntax and flags', () => {
    expect(linearRegex('hello', 'i').test('HeLLo there')).toBe(true);
    expect(linearRegex('^b$', 'm').test('a\nb')).toBe(true);
    expect(linearRegex('a.b', 's').test('a\nb')).toBe(true);
    expect(linearRegex('(?<word>\\d+)\\u0041').test('12A')).toBe(true);
  });

  it('names the construct it cannot run in linear time, and passes the same characters escaped or in a class', () => {
    expect(linearRegexProblem('(a)\\1')).toMatch(
      /^the backreference \\1 is not supported: patterns run in linear time/,
    );
    expect(linearRegexProblem('(?<x>a)\\k<x>')).toMatch(/^the named backreference/);
    expect(linearRegexProblem('foo(?=bar)')).toMatch(/^the lookahead \(\?=…\) is not supported/);
    expect(linearRegexProblem('(?!x)')).toMatch(/^the negative lookahead/);
    expect(linearRegexProblem('(?<=x)y')).toMatch(/^the lookbehind/);
    expect(linearRegexProblem('(?<!x)y')).toMatch(/^the negative lookbehind/);
    expect(linearRegexProblem('a(')).toMatch(/missing closing \)/);
    expect(linearRegexProblem('x', 'q')).toBe('unknown regular expression flag "q"');
    expect(linearRegexProblem('[(?=]\\(?=\\\\1')).toBeUndefined();
  });
});

describe('JSON Schema patterns', () => {
  it('validate in linear time, and a backreference fails the schema, not the process', () => {
    const started = performance.now();
    expect(schemaErrors({ type: 'string', pattern: '^(a|a)+$' }, `${'a'.repeat(40)}!`)).toEqual([
      '(root): must match pattern "^(a|a)+$"',
    ]);
    expect(
      schemaErrors(
        { type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } } },
        {
          [`${'a'.repeat(40)}`]: 'x',
          [`${'a'.repeat(40)}!`]: 'y',
        },
      ),
    ).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(() => schemaErrors({ type: 'string', pattern: '(a)\\1' }, 'aa')).toThrow(
      /the schema is not a valid JSON Schema: the backreference \\1 is not supported/,
    );
  });
});
