#!/usr/bin/env node
import { CommanderError } from 'commander';
import { EXIT_CODES } from '../core/errors.js';
import { createProgram } from './program.js';
import { loadDotEnv, redactProcessOutput } from './redacted-output.js';
import { reportError } from './shared.js';

// A reader that stops early (`switchboard agent logs ID | head -1`) closes the pipe: that is the
// reader's choice, not a failure, so end quietly instead of dying on an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(EXIT_CODES.OK);
  });
}

// Secrets and settings may live in a `.env` file in the working directory; the environment wins. No
// known secret is ever printed, whichever path the text took.
loadDotEnv();
redactProcessOutput();

const program = await createProgram(process.argv.slice(2));

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
