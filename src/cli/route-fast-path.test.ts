import { describe, expect, it } from 'vitest';
import { parseFastRoute, servedRoutingArgs } from './route-fast-path.js';

describe('parseFastRoute', () => {
  it('reads a plain route as commander would hand it over', () => {
    expect(
      parseFastRoute([
        '--state-dir',
        '/state',
        'route',
        '--skills',
        'skills',
        '--train=a.jsonl',
        '--train',
        'b.jsonl',
        '--confidence-threshold',
        '0.4',
        '--no-cache',
        '--print',
        'skill',
        'the app',
        'crashes',
      ]),
    ).toEqual({
      words: ['the app', 'crashes'],
      globals: { stateDir: '/state' },
      flags: {
        ledger: true,
        cache: false,
        skills: 'skills',
        train: ['a.jsonl', 'b.jsonl'],
        confidenceThreshold: 0.4,
        print: 'skill',
      },
    });
  });

  it.each([
    [['route', '--help']],
    [['route', 'learn']],
    [['route', 'feedback', 'id', 'fix-bug']],
    [['route', 'prime', '--skills', 'x']],
    [['route', '--print', 'colour', 'x']],
    [['route', '--print', 'skill', '--json', 'x']],
    [['route', '--confidence-threshold', '2', 'x']],
    [['route', '--skills']],
    [['route', '--', '-x']],
    [['--json', 'route', 'x']],
    [['call', 'claude:haiku', 'x']],
    [['route', '--min-confidence', '0.9', 'x']],
  ])('leaves %j to commander', (args) => {
    expect(parseFastRoute(args)).toBeUndefined();
  });

  it('gives serve the routing flags with absolute paths', () => {
    expect(
      servedRoutingArgs({ skills: 'skills', train: ['t.jsonl'], mode: 'local', ledger: false }, '/work'),
    ).toEqual(['--skills', '/work/skills', '--mode', 'local', '--train', '/work/t.jsonl', '--no-ledger']);
  });
});
