import type { TokenUsage } from './call-types.js';

/** US dollars per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * List prices of known models (USD per million tokens), matched by the longest prefix of the model id.
 * Config can override or add entries. A model with no price has cost `null`, never a silent 0.
 */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = {
  // Anthropic: cache writes (5-minute) cost 1.25× input, cache reads 0.1× input.
  'claude-opus-4': { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  'claude-opus-4-5': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-sonnet-4': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-haiku-4': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  // OpenAI: cached input is billed at the cached rate; there is no separate cache-write charge.
  'gpt-4.1': { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4, cacheRead: 0.025, cacheWrite: 0 },
  'gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 0 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075, cacheWrite: 0 },
  // Gemini (prompts up to 200k tokens).
  'gemini-2.5-pro': { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 0 },
  'gemini-2.5-flash': { input: 0.3, output: 2.5, cacheRead: 0.075, cacheWrite: 0 },
  'gemini-2.5-flash-lite': { input: 0.1, output: 0.4, cacheRead: 0.025, cacheWrite: 0 },
};

/** The price of a model: an exact id first, then the longest known prefix. */
export function findPrice(
  model: string,
  prices: Readonly<Record<string, ModelPrice>> = DEFAULT_PRICES,
): ModelPrice | undefined {
  const exact = prices[model];
  if (exact !== undefined) return exact;
  // A model that only a prefix matches (`claude-sonnet-4-6`) is looked up on every call: the answer
  // is kept per table, which callers build once and do not change.
  let found = prefixMatches.get(prices);
  if (found === undefined) {
    found = new Map();
    prefixMatches.set(prices, found);
  }
  if (found.has(model)) return found.get(model);
  let best: string | undefined;
  for (const key of Object.keys(prices)) {
    if (model.startsWith(key) && (best === undefined || key.length > best.length)) best = key;
  }
  const price = best === undefined ? undefined : prices[best];
  if (found.size < PREFIX_MATCHES_KEPT) found.set(model, price);
  return price;
}

const prefixMatches = new WeakMap<
  Readonly<Record<string, ModelPrice>>,
  Map<string, ModelPrice | undefined>
>();
const PREFIX_MATCHES_KEPT = 256;

/** Cost of a call in USD, or null when the model has no known price. */
export function costOf(
  model: string,
  usage: TokenUsage,
  prices?: Readonly<Record<string, ModelPrice>>,
): number | null {
  const price = findPrice(model, prices);
  if (price === undefined) return null;
  return (
    (usage.inputTokens * price.input +
      usage.outputTokens * price.output +
      usage.cacheReadTokens * price.cacheRead +
      usage.cacheWriteTokens * price.cacheWrite) /
    1_000_000
  );
}
