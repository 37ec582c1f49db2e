import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { authorize, callerOf, checkListenAddress, isLoopbackAddress, serverToken } from './auth.js';

describe('isLoopbackAddress', () => {
  it('knows loopback peers in every form Node reports them', () => {
    for (const address of [
      '127.0.0.1',
      '127.0.0.2',
      '127.255.0.9',
      '::1',
      '::ffff:127.0.0.1',
      '::FFFF:127.0.0.5',
    ])
      expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of [
      undefined,
      '',
      '0.0.0.0',
      '::',
      '192.0.2.2',
      '::ffff:192.0.2.2',
      '10.127.0.1',
      'fd00::1',
    ])
      expect(isLoopbackAddress(address), String(address)).toBe(false);
  });
});

describe('checkListenAddress', () => {
  it('lets loopback listen without a token and refuses anything else without one', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost'])
      expect(() => checkListenAddress(host, undefined)).not.toThrow();
    for (const host of ['0.0.0.0', '::', '192.0.2.2', 'my-host.example'])
      expect(() => checkListenAddress(host, undefined)).toThrow(/refusing to listen on .* without a token/);
    expect(() => checkListenAddress('0.0.0.0', 'a-long-enough-token-value')).not.toThrow();
  });
});

describe('serverToken', () => {
  it('reads SWITCHBOARD_SERVER_TOKEN, treats empty as unset and refuses a short one', () => {
    expect(serverToken({})).toBeUndefined();
    expect(serverToken({ SWITCHBOARD_SERVER_TOKEN: '  ' })).toBeUndefined();
    expect(serverToken({ SWITCHBOARD_SERVER_TOKEN: ' 0123456789abcdef ' })).toBe('0123456789abcdef');
    expect(() => serverToken({ SWITCHBOARD_SERVER_TOKEN: 'short' })).toThrow(/shorter than 16 characters/);
  });
});

describe('authorize', () => {
  const token = 'the-real-token-0123456789';
  // Same length, one character different: refused only by comparing the bytes.
  const sameLength = 'the-real-token-0123456780';

  it('lets a caller in with the exact token only, on loopback as anywhere', () => {
    expect(authorize({ authorization: `Bearer ${token}` }, token)).toBe(true);
    expect(authorize({ authorization: `bearer  ${token} ` }, token)).toBe(true);
    expect(sameLength).toHaveLength(token.length);
    for (const wrong of [
      `Bearer ${sameLength}`,
      `Bearer ${token.slice(1)}`,
      `Bearer ${token}0`,
      `Basic ${token}`,
      token,
      '',
      undefined,
    ])
      expect(authorize({ authorization: wrong }, token), String(wrong)).toBe(false);
  });

  it('gives a loopback peer no pass: only its header counts', () => {
    const local = { socket: { remoteAddress: '127.0.0.1' }, headers: {} } as unknown as IncomingMessage;
    expect(authorize(callerOf(local), token)).toBe(false);
    const holding = {
      socket: { remoteAddress: '127.0.0.1' },
      headers: { authorization: `Bearer ${token}` },
    } as unknown as IncomingMessage;
    expect(authorize(callerOf(holding), token)).toBe(true);
  });
});
