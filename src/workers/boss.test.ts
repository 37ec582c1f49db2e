import { describe, expect, it } from 'vitest';
import { bossErrorText } from './boss.js';

describe('bossErrorText', () => {
  it('gives the code, the first line and the queue of the plain copies pg-boss emits, never [object Object]', () => {
    const copy = {
      code: '57P01',
      severity: 'FATAL',
      message: 'terminating connection due to administrator command\nat Parser.parse',
      queue: 'workflows',
    };
    expect(bossErrorText(copy)).toBe(
      '57P01 terminating connection due to administrator command (queue workflows)',
    );
    expect(
      bossErrorText(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' })),
    ).toBe('ECONNRESET Connection terminated unexpectedly');
    expect(bossErrorText({})).toBe('an error without a message');
    expect(bossErrorText('plain text')).toBe('plain text');
  });
});
