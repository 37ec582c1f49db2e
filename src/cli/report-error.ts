import { exitCodeFor, isSwitchboardError, SwitchboardError } from '../core/errors.js';

/**
 * Reports an error as one line (message, then what to do) on stderr, and as JSON on stdout when the
 * caller asked for JSON; returns the exit code.
 */
export function reportError(error: unknown, json: boolean): number {
  const known = isSwitchboardError(error)
    ? error
    : new SwitchboardError('INTERNAL', error instanceof Error ? error.message : String(error), {
        hint: 'this is a bug in switchboard; please report it with the command you ran',
        cause: error,
      });
  const line = known.hint === undefined ? known.message : `${known.message} (${known.hint})`;
  process.stderr.write(`switchboard: ${line}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ error: known.toJSON() })}\n`);
  if (process.env['SWITCHBOARD_DEBUG'] && !isSwitchboardError(error) && error instanceof Error) {
    process.stderr.write(`${error.stack ?? ''}\n`);
  }
  return exitCodeFor(known.code);
}
