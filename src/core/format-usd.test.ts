import { describe, expect, it } from 'vitest';
import { formatUsd } from './format-usd.js';

describe('formatUsd', () => {
  it('keeps three significant digits of small amounts, where four decimals would print $0.0000', () => {
    expect(formatUsd(0.0000234)).toBe('$0.0000234');
    expect(formatUsd(0.001924)).toBe('$0.00192');
    expect(formatUsd(0.00005)).toBe('$0.00005');
    expect(formatUsd(1e-9)).toBe('$0.000000001');
  });

  it('prints cents for larger amounts and $0 for nothing', () => {
    expect(formatUsd(0)).toBe('$0');
    expect(formatUsd(0.5)).toBe('$0.50');
    expect(formatUsd(1234.5)).toBe('$1234.50');
  });
});
