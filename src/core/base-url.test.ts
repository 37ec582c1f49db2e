import { describe, expect, it } from 'vitest';
import { normalizeBaseUrl, sameEndpoint } from './base-url.js';

describe('sameEndpoint: where a key may go', () => {
  it('matches spellings of one endpoint', () => {
    expect(sameEndpoint('http://127.0.0.1:1234/v1/', 'http://127.0.0.1:1234/v1')).toBe(true);
    expect(sameEndpoint('HTTP://LocalHost:80/v1', 'http://localhost/v1')).toBe(true);
    expect(sameEndpoint('https://api.openai.com:443/v1//', 'https://api.openai.com/v1')).toBe(true);
    expect(sameEndpoint('http://127.0.0.1:1234/x/../v1', 'http://127.0.0.1:1234/v1')).toBe(true);
  });

  it('tells other endpoints apart, however they are dressed up', () => {
    const allowed = 'http://allowed.example/v1';
    for (const other of [
      'http://allowed.example@evil.example/v1',
      'http://allowed.example:secret@evil.example/v1',
      'http://allowed.example.evil.example/v1',
      'https://allowed.example/v1',
      'http://allowed.example:8080/v1',
      'http://allowed.example/v2',
      'http://allowed.example/v1?to=evil',
      'http://allowed.example/v1#x',
      'ftp://allowed.example/v1',
      'not a url',
    ]) {
      expect(sameEndpoint(other, allowed), other).toBe(false);
    }
  });

  it('never matches a URL that carries credentials, even against itself', () => {
    expect(normalizeBaseUrl('http://user:pass@host/v1')).toBeUndefined();
    expect(sameEndpoint('http://user:pass@host/v1', 'http://user:pass@host/v1')).toBe(false);
  });
});
