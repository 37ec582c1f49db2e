import { describe, expect, it } from 'vitest';
import { parseCallBody } from './call-body.js';

describe('parseCallBody', () => {
  it('keeps the fields POST /call documents and nothing else', () => {
    const body = {
      spec: 'claude:haiku,anthropic:claude-haiku-4-5',
      prompt: 'hi',
      system: 'be brief',
      schema: { type: 'object' },
      timeoutMs: 30_000,
      stageTimeoutMs: 10_000,
      idleTimeoutMs: 5_000,
      tags: { caller: 'ci' },
      maxCostUsd: 0.05,
      schemaRetries: 0,
      ignoreCooldown: true,
      storeText: false,
    };
    expect(parseCallBody(JSON.stringify(body))).toEqual(body);
    expect(parseCallBody('{"spec": "claude:haiku", "prompt": ""}')).toEqual({
      spec: 'claude:haiku',
      prompt: '',
    });
  });

  it('names the field that is wrong', () => {
    const wrong: [unknown, RegExp][] = [
      [{ prompt: 'hi' }, /"spec"/],
      [{ spec: 'claude:haiku' }, /"prompt" to be a string/],
      [{ spec: 'claude:haiku', prompt: 'hi', schema: [1] }, /"schema" to be a JSON Schema object/],
      [{ spec: 'claude:haiku', prompt: 'hi', tags: { n: 1 } }, /"tags" to be an object of strings/],
      [{ spec: 'claude:haiku', prompt: 'hi', maxCostUsd: 0 }, /"maxCostUsd" to be a positive number/],
      [{ spec: 'claude:haiku', prompt: 'hi', schemaRetries: 11 }, /"schemaRetries" to be a whole number/],
      [{ spec: 'claude:haiku', prompt: 'hi', storeText: 'yes' }, /"storeText" to be true or false/],
      [{ spec: 'claude:haiku', prompt: 'hi', stream: true }, /unknown field "stream"/],
    ];
    for (const [body, message] of wrong) expect(() => parseCallBody(JSON.stringify(body))).toThrow(message);
    expect(() => parseCallBody('[]')).toThrow(/JSON object/);
  });
});
