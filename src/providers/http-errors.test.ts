import { describe, expect, it } from 'vitest';
import { classifyStatus, errorFromStatus } from './http-errors.js';

// The one rule for what a provider's HTTP status means, read by the API providers (through
// errorFromStatus) and by the gateway's relay: they must not drift apart again.

describe('classifyStatus', () => {
  it.each([
    [400, 'INVALID_INPUT', false],
    [401, 'AUTH', false],
    [403, 'AUTH', false],
    [404, 'INVALID_INPUT', false],
    [408, 'TIMEOUT', true],
    [409, 'PROVIDER_ERROR', true],
    [413, 'INVALID_INPUT', false],
    [422, 'INVALID_INPUT', false],
    [425, 'PROVIDER_ERROR', true],
    [429, 'RATE_LIMITED', true],
    [500, 'PROVIDER_ERROR', true],
    [503, 'OVERLOADED', true],
    [529, 'OVERLOADED', true],
  ])('HTTP %i is %s, retryable %s', (status, code, retryable) => {
    expect(classifyStatus(status)).toEqual({ code, retryable });
    const error = errorFromStatus('anthropic', status, 'no', undefined);
    expect({ code: error.code, retryable: error.retryable }).toEqual({ code, retryable });
    expect(error.message).toContain(`HTTP ${status}`);
  });
});
