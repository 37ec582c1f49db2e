import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { redactSecrets } from '../core/secrets.js';

export interface AtomicWriteOptions {
  /**
   * Remove known secrets from the text. Off only for a file that is the user's own and must keep every
   * byte (a Claude Code settings file holds its `env`, keys included, on purpose).
   * @default true
   */
  redact?: boolean;
  /** Permissions of the new file (before the umask), e.g. an existing file's, to keep them. @default 0o644 */
  mode?: number;
}

/**
 * Writes a file whole or not at all: a temporary file beside the target, flushed to disk, then
 * renamed over it, so a reader (a metrics collector, a router loading learned examples, a person
 * opening a report) sees the old file or the new one, never half of one, and a failure leaves the old
 * one in place. The temporary name starts with a dot and ends in `.tmp`, so collectors that read
 * `*.prom` or `*.jsonl` ignore it. Throws the file system's error; callers say what failed.
 */
export function writeFileAtomically(
  file: string,
  text: string,
  { redact = true, mode = 0o644 }: AtomicWriteOptions = {},
): void {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`);
  try {
    const descriptor = openSync(temporary, 'wx', mode);
    try {
      // Reports quote errors and prompts: the last chance to keep a secret out of a file.
      writeSync(descriptor, redact ? redactSecrets(text) : text);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
