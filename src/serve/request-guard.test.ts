import { describe, expect, it } from 'vitest';
import {
  allowedHostNames,
  checkRequest,
  corsFor,
  hostNameOf,
  normalizeOrigin,
  parseAllowedOrigins,
  type GuardSettings,
} from './request-guard.js';

const loopback: GuardSettings = { listenHost: '127.0.0.1', allowedOrigins: new Set() };

function statusOf(
  headers: Record<string, string>,
  settings: GuardSettings = loopback,
  method = 'GET',
  presentedToken = false,
): number | undefined {
  return checkRequest({ method, headers }, settings, presentedToken)?.status;
}

describe('the Host check', () => {
  it('answers the loopback names and the --host, at any port, and nothing else', () => {
    expect(hostNameOf('[::1]:8787')).toBe('[::1]');
    expect(hostNameOf('LocalHost:1')).toBe('localhost');
    expect(hostNameOf('127.0.0.1')).toBe('127.0.0.1');
    expect([...allowedHostNames('0.0.0.0')].sort()).toEqual(['127.0.0.1', '[::1]', 'localhost']);
    expect(allowedHostNames('::1').has('[::1]')).toBe(true);
    expect(allowedHostNames('fd00::5').has('[fd00::5]')).toBe(true);
    expect(allowedHostNames('My-Box.lan').has('my-box.lan')).toBe(true);
    for (const host of ['127.0.0.1:8787', 'localhost:9000', '[::1]:8787', 'localhost'])
      expect(statusOf({ host }), host).toBeUndefined();
    for (const host of ['evil.example:8787', 'localhost.evil.example', '127.0.0.2:8787', '0.0.0.0:8787', ''])
      expect(statusOf({ host }), host).toBe(403);
    expect(statusOf({})).toBe(403);
    const wide = { ...loopback, listenHost: '0.0.0.0' };
    expect(statusOf({ host: '0.0.0.0:8787' }, wide)).toBe(403);
    expect(statusOf({ host: 'my-box.lan:8787' }, { ...loopback, listenHost: 'my-box.lan' })).toBeUndefined();
    // The token is something a page cannot send: a token holder may use any name.
    expect(statusOf({ host: 'my-box.lan:8787' }, wide, 'GET', true)).toBeUndefined();
  });
});

describe('the Origin check', () => {
  it('refuses an origin that is neither allowed nor the server itself, token or not', () => {
    const settings = { ...loopback, allowedOrigins: parseAllowedOrigins(['HTTPS://App.Example:443/']) };
    expect([...settings.allowedOrigins]).toEqual(['https://app.example']);
    const host = '127.0.0.1:8787';
    expect(statusOf({ host, origin: 'https://app.example' }, settings)).toBeUndefined();
    expect(statusOf({ host, origin: 'http://127.0.0.1:8787' }, settings)).toBeUndefined();
    for (const origin of [
      'http://app.example',
      'https://app.example:8443',
      'null',
      'http://127.0.0.1:8788',
      'x',
    ])
      expect(statusOf({ host, origin }, settings, 'GET', true), origin).toBe(403);
    expect(() => parseAllowedOrigins(['app.example'])).toThrow(/"app\.example" is not an http\(s\) origin/);
    expect(() => parseAllowedOrigins(['https://app.example/path'])).toThrow(/not an http\(s\) origin/);
    expect(normalizeOrigin('file:///etc')).toBeUndefined();
  });

  it('sends CORS headers to an allowed origin only, and recognises its preflight', () => {
    const allowed = new Set(['https://app.example']);
    const preflight = corsFor(
      {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
      },
      allowed,
    );
    expect(preflight.preflight).toBe(true);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(corsFor({ method: 'POST', headers: { origin: 'https://evil.example' } }, allowed)).toEqual({
      headers: {},
      preflight: false,
    });
  });
});

describe('the body check', () => {
  it('takes a POST body only as application/json', () => {
    const host = '127.0.0.1:8787';
    for (const type of ['application/json', 'Application/JSON; charset=utf-8'])
      expect(statusOf({ host, 'content-type': type }, loopback, 'POST'), type).toBeUndefined();
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded'])
      expect(statusOf({ host, 'content-type': type }, loopback, 'POST'), type).toBe(415);
    expect(statusOf({ host }, loopback, 'POST')).toBe(415);
    expect(statusOf({ host }, loopback, 'GET')).toBeUndefined();
  });
});
