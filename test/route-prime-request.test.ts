import { describe, expect, it } from 'vitest';
import type { Skill } from '../src/core/route-types.js';
import { answerRows, primeRequest } from '../src/route/prime/prime-request.js';

// The request `route prime` sends and how an answer becomes rows: pure functions, no LLM.

const skill = (name: string): Skill => ({
  name,
  description: `about ${name}`,
  examples: [],
  patterns: [],
  file: '/nonexistent',
});

describe('the route prime request', () => {
  it('keys the answer by skill name, or by s1, s2, … when a name cannot be a schema property', () => {
    const plain = primeRequest([skill('fix-bug')], [skill('fix-bug')], 5, 0);
    expect(plain.schema).toMatchObject({ properties: { examples: { required: ['fix-bug'] } } });
    expect(plain.schema).not.toHaveProperty('properties.near_misses');

    const skills = [skill('fix-bug'), skill('Write docs (team)')];
    const aliased = primeRequest(skills, skills, 5, 3);
    expect(aliased.schema).toMatchObject({
      properties: { examples: { required: ['s1', 's2'] } },
      required: ['examples', 'near_misses'],
    });
    expect(aliased.prompt).toContain('s1 (fix-bug), s2 (Write docs (team))');
    const rows = answerRows(
      { examples: { s1: ['it broke'], s2: ['the guide is stale'] }, near_misses: ['lunch?'] },
      skills,
      5,
      3,
    );
    expect(Object.fromEntries(rows)).toEqual({
      'fix-bug': ['it broke'],
      'Write docs (team)': ['the guide is stale'],
      none: ['lunch?'],
    });
  });

  it('trims, drops repeats and near misses that repeat an example, keeps what was asked for, and refuses an empty list', () => {
    const skills = [skill('fix-bug')];
    const rows = answerRows(
      {
        examples: {
          'fix-bug': ['  it  broke ', 'It broke', '', 'crash on save', 'login fails', 'extra one'],
        },
        near_misses: ['it broke', 'order lunch'],
      },
      skills,
      3,
      5,
    );
    expect(Object.fromEntries(rows)).toEqual({
      'fix-bug': ['it broke', 'crash on save', 'login fails'],
      none: ['order lunch'],
    });
    expect(() => answerRows({ examples: { 'fix-bug': ['   '] } }, skills, 3, 0)).toThrow(
      expect.objectContaining({
        code: 'SCHEMA',
        message: expect.stringMatching(/no usable requests for fix-bug/),
      }),
    );
  });
});
