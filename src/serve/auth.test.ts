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

  it('lets a caller beyond loopback in with the exact token only', () => {
    for (const remoteAddress of ['192.0.2.7', '::ffff:192.0.2.7', '2001:db8::1', '10.127.0.1', undefined]) {
      const caller = (authorization: string | undefined) => ({ remoteAddress, authorization });
      expect(authorize(caller(`Bearer ${token}`), token), String(remoteAddress)).toBe('token');
      expect(authorize(caller(`bearer  ${token} `), token)).toBe('token');
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
        expect(authorize(caller(wrong), token), String(wrong)).toBeUndefined();
      // A server without a token answers no one beyond loopback, whatever they send.
      expect(authorize(caller(`Bearer ${token}`), undefined)).toBeUndefined();
    }
  });

  it('lets loopback in without the token, unless the token is required', () => {
    const loopback = { remoteAddress: '127.0.0.1', authorization: `Bearer ${sameLength}` };
    expect(authorize(loopback, token)).toBe('loopback');
    expect(authorize(loopback, undefined)).toBe('loopback');
    expect(authorize(loopback, token, true)).toBeUndefined();
    expect(authorize({ ...loopback, authorization: `Bearer ${token}` }, token, true)).toBe('token');
  });

  it('does not let a proxied request in as loopback: behind nginx or a tunnel every caller is 127.0.0.1', () => {
    const proxied = { remoteAddress: '127.0.0.1', authorization: undefined, forwarded: true };
    expect(authorize(proxied, token)).toBeUndefined();
    expect(authorize(proxied, undefined)).toBeUndefined();
    expect(authorize({ ...proxied, authorization: `Bearer ${token}` }, token)).toBe('token');
    for (const header of ['forwarded', 'x-forwarded-for', 'x-real-ip', 'x-forwarded-host']) {
      const request = {
        socket: { remoteAddress: '127.0.0.1' },
        headers: { [header]: '203.0.113.9' },
      } as unknown as IncomingMessage;
      expect(authorize(callerOf(request), token), header).toBeUndefined();
    }
    const direct = { socket: { remoteAddress: '127.0.0.1' }, headers: {} } as unknown as IncomingMessage;
    expect(authorize(callerOf(direct), token)).toBe('loopback');
  });
});
