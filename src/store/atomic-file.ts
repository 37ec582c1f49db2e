import { randomUUID } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fchownSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { redactSecrets } from '../core/secrets.js';

export interface AtomicWriteOptions {
  /**
   * Remove known secrets from the text. Off only for a file that is the user's own and must keep every
   * byte (a Claude Code settings file holds its `env`, keys included, on purpose).
   * @default true
   */
  redact?: boolean;
  /**
   * Permissions of a new file (before the umask). A file that already exists keeps its own
   * permissions (and owner, where the process may set it) whatever this says.
   * @default 0o644
   */
  mode?: number;
}

/**
 * Writes a file whole or not at all: a temporary file beside the target, flushed to disk, then
 * renamed over it, so a reader (a metrics collector, a router loading learned examples, a person
 * opening a report) sees the old file or the new one, never half of one, and a failure leaves the old
 * one in place. The temporary name starts with a dot and ends in `.tmp`, so collectors that read
 * `*.prom` or `*.jsonl` ignore it. A file that exists keeps its permissions and, when the process
 * may set it, its owner: the rename would otherwise give it the temporary file's. Throws the file
 * system's error; callers say what failed.
 */
export function writeFileAtomically(
  file: string,
  text: string,
  { redact = true, mode = 0o644 }: AtomicWriteOptions = {},
): void {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`);
  // The name's shape is read back by `temporaryWriter`.
  const existing = statIfExists(file);
  try {
    const descriptor = openSync(temporary, 'wx', mode);
    try {
      // The umask applied to openSync's mode; fchmod is not subject to it, so 0o664 stays 0o664.
      if (existing) keepOwnerAndMode(descriptor, existing);
      // Reports quote errors and prompts: the last chance to keep a secret out of a file.
      writeWhole(descriptor, Buffer.from(redact ? redactSecrets(text) : text, 'utf8'));
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

/** `writeFileAtomically`'s temporary names: `.<file name>.<pid>.<8 hex>.tmp`. */
const TEMPORARY_NAME = /^\.(.+)\.(\d+)\.[0-9a-f]{8}\.tmp$/;

/**
 * The process id that wrote `entry`, when `entry` is the name of a temporary file `writeFileAtomically`
 * made for a file named `name` (one a killed write left beside it); undefined for any other name.
 */
export function temporaryWriter(entry: string, name: string): number | undefined {
  const match = TEMPORARY_NAME.exec(entry);
  return match === null || match[1] !== name ? undefined : Number(match[2]);
}

function statIfExists(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function keepOwnerAndMode(descriptor: number, existing: Stats): void {
  const sameOwner = existing.uid === process.getuid?.() && existing.gid === process.getgid?.();
  if (!sameOwner) {
    try {
      fchownSync(descriptor, existing.uid, existing.gid);
    } catch {
      // Only root (or the owner, for a group it belongs to) may give a file away; the new file then
      // belongs to whoever wrote it, as with any editor that saves by rename.
    }
  }
  fchmodSync(descriptor, existing.mode & 0o7777);
}

/** writeSync may write fewer bytes than asked (a signal, a full pipe, a network file system): loop. */
function writeWhole(descriptor: number, bytes: Buffer): void {
  for (let written = 0; written < bytes.length;) {
    const count = writeSync(descriptor, bytes, written, bytes.length - written);
    if (count === 0) throw new Error('the file system accepted no bytes');
    written += count;
  }
}
