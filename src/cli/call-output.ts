import type { CallResult } from '../core/call-types.js';

/**
 * Prints a call's outcome the one way `switchboard call` does, whether it ran in process or on a
 * server: warnings on stderr; on stdout the whole result (`--json`), the structured value (`--schema`),
 * or the answer's text (`--print text`, the default). `streamed`: the text is already out.
 */
export function printCallResult(
  result: CallResult,
  { json, streamed }: { json: boolean; streamed: boolean },
): void {
  for (const warning of result.warnings) process.stderr.write(`switchboard: warning: ${warning}\n`);
  if (streamed) process.stdout.write(result.text.endsWith('\n') ? '' : '\n');
  else if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else if (result.structured !== undefined)
    process.stdout.write(`${JSON.stringify(result.structured, null, 2)}\n`);
  else process.stdout.write(result.text.endsWith('\n') ? result.text : `${result.text}\n`);
}
