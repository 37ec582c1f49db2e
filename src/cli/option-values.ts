// Option values as the commands check them, without commander: its parsers (parse-seconds.ts, call.ts)
// turn `undefined` into a usage error, and the fast path of `call` (call-fast-path.ts) into the full
// parser, which then reports it.

/** A positive number of seconds (fractions allowed), or undefined. */
export function secondsOf(value: string): number | undefined {
  const seconds = Number(value);
  return value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 ? undefined : seconds;
}

/** `--tag key=value` as a pair, or undefined when it is not one. */
export function tagOf(value: string): [string, string] | undefined {
  const match = /^([^=]+)=(.*)$/.exec(value);
  return match === null ? undefined : [match[1] as string, match[2] as string];
}

/** `--schema-retries`: a whole number from 0 to 10, or undefined. */
export function countOf(value: string): number | undefined {
  const count = Number(value);
  return Number.isInteger(count) && count >= 0 && count <= 10 ? count : undefined;
}

/** `--max-cost`: a positive number of dollars, or undefined. */
export function dollarsOf(value: string): number | undefined {
  const dollars = Number(value);
  return value.trim() === '' || !Number.isFinite(dollars) || dollars <= 0 ? undefined : dollars;
}
