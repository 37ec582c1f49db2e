import { describe, expect, it } from 'vitest';
import { parseFastHook } from './hook-fast-path.js';

describe('parseFastHook', () => {
  it('reads the command `hooks install` writes as commander would hand it over', () => {
    expect(
      parseFastHook([
        '--state-dir',
        '/state',
        '--config=/project/switchboard.yaml',
        'hooks',
        'run',
        '--skills',
        '/skills',
        '--deadline',
        '300',
        '--min-confidence=0.5',
      ]),
    ).toEqual({
      globals: { stateDir: '/state', config: '/project/switchboard.yaml' },
      flags: { skills: '/skills', deadline: '300', minConfidence: '0.5' },
    });
    expect(parseFastHook(['hooks', 'run', '--server', 'http://127.0.0.1:8787', '--no-server'])).toEqual({
      globals: {},
      flags: { server: false },
    });
  });

  it.each([
    [['hooks', 'install', '--skills', 'x']],
    [['hooks']],
    [['hooks', 'run', '--help']],
    [['hooks', 'run', '--from-a-newer-version', 'x']],
    [['hooks', 'run', 'extra']],
    [['hooks', 'run', '--skills']],
    [['hooks', 'run', '--deadline', '-1']],
    [['hooks', 'run', '--state-dir', '/state']],
    [['--quiet', 'hooks', 'run']],
    [['route', 'hooks', 'run']],
  ])('leaves %j to commander', (args) => {
    expect(parseFastHook(args)).toBeUndefined();
  });
});
