import { InvalidArgumentError } from 'commander';

/** A `--timeout`-style option: a positive number of seconds (fractions allowed). */
export function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new InvalidArgumentError('expected a positive number of seconds');
  }
  return seconds;
}
