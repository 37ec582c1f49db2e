import { CommanderError } from 'commander';
import { EXIT_CODES } from '../core/errors.js';
import { createProgram } from './program.js';
import { reportError } from './report-error.js';

/** Parses `argv` (node, script, then the arguments) with the full command tree and runs the command. */
export async function runProgram(argv: readonly string[]): Promise<void> {
  const program = await createProgram(argv.slice(2));
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end with a CommanderError too; only real usage errors are failures.
      process.exitCode = error.exitCode === 0 ? EXIT_CODES.OK : EXIT_CODES.INVALID_INPUT;
    } else {
      process.exitCode = reportError(error, argv.includes('--json'));
    }
  }
}
