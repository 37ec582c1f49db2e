import { afterEach, describe, expect, it } from 'vitest';
import { SwitchboardError } from './errors.js';
import {
  resetSecrets,
  redactDeep,
  redactJsonText,
  redactSecrets,
  redactedJsonText,
  registerSecret,
} from './secrets.js';

const planted: string[] = [];
function plant(name: string, value: string): void {
  process.env[name] = value;
  planted.push(name);
  resetSecrets();
}

afterEach(() => {
  for (const name of planted.splice(0)) delete process.env[name];
  resetSecrets();
});

describe('redactSecrets', () => {
  it('removes the values of variables named like credentials', () => {
    plant('FOO_TOKEN', 'foo-token-value-1');
    expect(redactSecrets('a foo-token-value-1 b')).toBe('a [redacted] b');
    plant('DB_PASSWORD', 'hunter2hunter2');
    expect(redactSecrets('pw=hunter2hunter2; t=foo-token-value-1')).toBe('pw=[redacted]; t=[redacted]');
  });

  it('removes each key of a comma-separated pool, and registered values whatever their names', () => {
    plant('GEMINI_API_KEYS', 'gemini-key-one-1,gemini-key-two-2');
    registerSecret('dotenv-database-url-value');
    expect(redactSecrets('gemini-key-two-2 / dotenv-database-url-value')).toBe('[redacted] / [redacted]');
  });

  it("removes a collector's credentials given as OTLP headers, the header value alone too", () => {
    plant('OTEL_EXPORTER_OTLP_HEADERS', 'authorization=Bearer collector-token-123,x-team=team-key-456');
    expect(redactSecrets('h=collector-token-123 t=team-key-456')).toBe('h=[redacted] t=[redacted]');
  });

  it('leaves short values and ordinary names alone, so text is not shredded', () => {
    plant('SHORT_KEY', 'abc');
    plant('SOME_SETTING', 'a-long-setting-value');
    expect(redactSecrets('abc a-long-setting-value')).toBe('abc a-long-setting-value');
  });

  it('removes keys it does not know by their shape', () => {
    expect(
      redactSecrets('got sk-ant-api03-abcdefghijklmnopqrstuvwx and AIzaSyA1234567890abcdefghijklmnopqrstu'),
    ).toBe('got [redacted] and [redacted]');
  });

  it('removes a key glued to the word before it, yet leaves hyphenated words that contain sk- or AIza', () => {
    const key = 'sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa0987';
    const google = 'AIzaSyA1234567890abcdefghijklmnopqrstu';
    expect(redactSecrets(`got 1${key}, x${key} and id${google}.`)).toBe(
      'got 1[redacted], x[redacted] and id[redacted].',
    );
    const words =
      'a task-management-framework-for-teams, the risk-assessment-and-mitigation-plan, ' +
      'whisk-together-the-flour-and-the-eggs, disk-partition-table-v2-backup-2024, the Task-Force-2024-Quarterly-Report';
    expect(redactSecrets(words)).toBe(words);
    expect(redactedJsonText({ words, key: `x${key}` })).toBe(JSON.stringify({ words, key: 'x[redacted]' }));
  });

  it('removes a known value wherever it sits, inside a word or glued to one', () => {
    plant('GLUED_TOKEN', 'glued-token-value-3');
    expect(redactSecrets('xglued-token-value-3y 9glued-token-value-3')).toBe('x[redacted]y 9[redacted]');
  });

  it('removes the password of a URL with credentials, leaving the rest of the URL', () => {
    expect(redactSecrets('cannot reach http://proxy:pw@127.0.0.1:9/v1: fetch failed')).toBe(
      'cannot reach http://proxy:[redacted]@127.0.0.1:9/v1: fetch failed',
    );
    expect(redactSecrets('mail me@example.com at 10:30, see https://example.com/a:b@c')).toBe(
      'mail me@example.com at 10:30, see https://example.com/a:b@c',
    );
  });

  it('cleans nested values and every SwitchboardError from birth', () => {
    plant('X_SECRET', 'x-secret-value-9');
    expect(redactDeep({ a: ['x-secret-value-9'], b: 1 })).toEqual({ a: ['[redacted]'], b: 1 });
    const error = new SwitchboardError('AUTH', 'bad key x-secret-value-9', {
      hint: 'not x-secret-value-9',
      details: { body: 'x-secret-value-9' },
    });
    expect(JSON.stringify(error.toJSON())).not.toContain('x-secret-value-9');
  });
});

describe('redactedJsonText', () => {
  it('redacts a secret as JSON escapes it, in keys and values, and keeps the JSON valid', () => {
    plant('QUOTED_TOKEN', 'tok"en\\value-42');
    registerSecret('plain-secret-value-7');
    const text = redactedJsonText({
      'tok"en\\value-42': ['plain-secret-value-7', 'said tok"en\\value-42'],
      key: 'sk-ant-abcdefghijklmnopqrstuvwxyz',
    });
    expect(text).not.toContain('en\\\\value-42');
    expect(text).not.toContain('plain-secret-value-7');
    expect(text).not.toContain('sk-ant-abcdefghijklmnop');
    expect(JSON.parse(text)).toEqual({
      '[redacted]': ['[redacted]', 'said [redacted]'],
      key: '[redacted]',
    });
  });

  it('reads \\u escapes: a key spelled with them is redacted whole and the JSON stays valid; others pass as they are', () => {
    registerSecret('quoted"known-value-5');
    const json = String.raw`{"a":"\u0073k-ant-api03-\u005AyXwVuTsRqPoNmLkJiHgFeDcBa0987 x","b":"quoted\u0022known\u002dvalue-5","c":"caf\u00e9"}`;
    expect(JSON.parse(redactJsonText(json))).toEqual({ a: '[redacted] x', b: '[redacted]', c: 'café' });
    const plain = String.raw`{"c":"caf\u00e9 \u0041Iz"}`;
    expect(redactJsonText(plain)).toBe(plain);
  });

  it("redacts a URL's password, escapes and all, without running into the next string", () => {
    const text = redactedJsonText({
      proxy: 'http://user:pa"ss\\word@proxy.example',
      a: 'http://host:8080',
      b: 'mail me@example.com',
    });
    expect(text).not.toContain('word@');
    expect(JSON.parse(text)).toEqual({
      proxy: 'http://user:[redacted]@proxy.example',
      a: 'http://host:8080',
      b: 'mail me@example.com',
    });
  });

  it('redacts every value the two-pass redaction did: keys after an escape, users with escapes', () => {
    const key = `sk-ant-api03-${'A'.repeat(40)}`;
    const google = `AIza${'B'.repeat(35)}`;
    const value = {
      lines: `bad key:\n${key}`,
      tab: `\t${key}`,
      control: `\u001b${google}`,
      proxy: 'http://us"er\\x:hunter2hunter2@proxy.example',
    };
    const text = redactedJsonText(value);
    expect(text).not.toContain('AAAAAAAAAA');
    expect(text).not.toContain('BBBBBBBBBB');
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(text)).toEqual(JSON.parse(redactSecrets(JSON.stringify(redactDeep(value)))));
  });
});
