#!/usr/bin/env node
import { CommanderError } from 'commander';
import { EXIT_CODES } from '../core/errors.js';
import { createProgram } from './program.js';
import { reportError } from './shared.js';

// Secrets and settings may live in a `.env` file in the working directory; the environment wins.
try {
  process.loadEnvFile('.env');
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
    process.stderr.write(`switchboard: warning: .env could not be read (${(error as Error).message})\n`);
  }
}

const program = createProgram();

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version end with a CommanderError too; only real usage errors are failures.
    process.exitCode = error.exitCode === 0 ? EXIT_CODES.OK : EXIT_CODES.INVALID_INPUT;
  } else {
    process.exitCode = reportError(error, process.argv.includes('--json'));
  }
}
