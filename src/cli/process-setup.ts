import { EXIT_CODES } from '../core/errors.js';
import { loadDotEnv, redactProcessOutput } from './redacted-output.js';

/**
 * What every command's process does before it runs, on either path of main.ts: a reader that stops
 * early (`switchboard agent logs ID | head -1`) closes the pipe, which is the reader's choice, not a
 * failure, so end quietly instead of dying on an unhandled EPIPE; secrets and settings may live in a
 * `.env` file in the working directory (the environment wins); no known secret is ever printed,
 * whichever path the text took.
 */
export function setUpProcess(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(EXIT_CODES.OK);
    });
  }
  loadDotEnv();
  redactProcessOutput();
}
