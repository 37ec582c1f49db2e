import { InvalidArgumentError } from 'commander';
import { secondsOf } from './option-values.js';

/** A `--timeout`-style option: a positive number of seconds (fractions allowed). */
export function parseSeconds(value: string): number {
  const seconds = secondsOf(value);
  if (seconds === undefined) throw new InvalidArgumentError('expected a positive number of seconds');
  return seconds;
}
