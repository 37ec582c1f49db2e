/**
 * Dollars for people: cents for large amounts, and three significant digits for small ones, so a
 * $0.0000234 call or a $0.00005 cap never prints as $0.0000. Never exponent notation.
 */
export function formatUsd(amount: number): string {
  if (!Number.isFinite(amount)) return `$${amount}`;
  if (amount === 0) return '$0';
  const magnitude = Math.floor(Math.log10(Math.abs(amount)));
  const digits = Math.min(20, Math.max(2, 2 - magnitude));
  const fixed = amount.toFixed(digits);
  // Trailing zeros past the cents carry no information.
  return `$${fixed.replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}
