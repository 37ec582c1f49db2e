import { createHmac, createSecretKey, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';

/** The variable that holds the server secret virtual keys are hashed with, instead of the file. */
export const KEY_SECRET_VARIABLE = 'SWITCHBOARD_KEY_SECRET';
/** File name of the generated server secret inside the state folder. */
export const KEY_SECRET_FILE_NAME = 'key-secret';
/** Fewest characters a server secret may have. */
export const MIN_KEY_SECRET_LENGTH = 32;
/** What every virtual key starts with, so it can be told from a provider's key at a glance (and by scanners). */
export const VIRTUAL_KEY_PREFIX = 'sbk_';
/** Characters of a key shown in listings: `sbk_` and the first 8 of its random part, too few to guess the rest. */
export const SHOWN_KEY_LENGTH = 12;

/** Bytes read at most from the secret file: it holds 64 hex characters and a newline. */
const MAX_SECRET_FILE_BYTES = 4096;

/** A new virtual key: `sbk_` and the base64url form (43 characters) of 32 random bytes. Shown once, never stored. */
export function generateVirtualKey(): string {
  return `${VIRTUAL_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The part of a key that is safe to show and store: its first 12 characters. */
export function virtualKeyPrefix(key: string): string {
  return key.slice(0, SHOWN_KEY_LENGTH);
}

/**
 * HMAC-SHA-256 of the key under the server secret, as hex: the only form of a key the ledger holds. A
 * copy of the ledger without the secret does not let anyone try keys against it offline.
 */
export function hashVirtualKey(key: string, secret: KeyObject): string {
  return createHmac('sha256', secret).update(key, 'utf8').digest('hex');
}

export interface LoadKeySecretOptions {
  /** The state folder; the generated secret lives in `key-secret` inside it. */
  stateDir: string;
  /**
   * Where `SWITCHBOARD_KEY_SECRET` is read.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
}

/**
 * The server secret virtual keys are hashed with: `SWITCHBOARD_KEY_SECRET` (at least 32 characters)
 * when set, otherwise the `key-secret` file in the state folder, created (mode 0600) on first use.
 * Machines sharing a PostgreSQL ledger need the same secret: set the variable to the file's content on
 * each. Returned as a `KeyObject`, which prints and serialises as nothing, so a log line or `--json`
 * cannot carry it by accident.
 *
 * The file appears whole or not at all: it is written under a temporary name and linked into place,
 * so processes racing to create it all end up with the one that was linked first, and no reader ever
 * sees a partial file.
 *
 * @throws SwitchboardError `INVALID_INPUT` for a variable shorter than 32 characters; `STORE_ERROR`
 *   when the file cannot be created or read, is readable by others, or is damaged.
 */
export function loadKeySecret({ stateDir, env = process.env }: LoadKeySecretOptions): KeyObject {
  const fromEnvironment = env[KEY_SECRET_VARIABLE];
  if (fromEnvironment !== undefined && fromEnvironment !== '') {
    if (fromEnvironment.length < MIN_KEY_SECRET_LENGTH) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        `${KEY_SECRET_VARIABLE} has ${fromEnvironment.length} characters; it needs at least ${MIN_KEY_SECRET_LENGTH}`,
        {
          hint: `set it to 32 or more random characters, such as the output of openssl rand -hex 32, or unset it to use ${KEY_SECRET_FILE_NAME} in the state folder`,
        },
      );
    }
    return createSecretKey(Buffer.from(fromEnvironment, 'utf8'));
  }
  const file = join(stateDir, KEY_SECRET_FILE_NAME);
  const existing = readSecretFile(file);
  if (existing !== undefined) return existing;
  createSecretFile(stateDir, file);
  const created = readSecretFile(file);
  if (created === undefined) throw secretFileError(file, 'was removed while it was being created');
  return created;
}

/** The secret in `file`, or undefined when there is none yet. */
function readSecretFile(file: string): KeyObject | undefined {
  let descriptor: number;
  try {
    descriptor = openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw secretFileError(file, 'cannot be read', error);
  }
  try {
    const stats = fstatSync(descriptor);
    if (!stats.isFile()) throw secretFileError(file, 'is not a regular file');
    if ((stats.mode & 0o077) !== 0) {
      throw new SwitchboardError(
        'STORE_ERROR',
        `key secret file ${file} can be read by other users (mode ${(stats.mode & 0o777).toString(8)})`,
        { hint: `make it private: chmod 600 ${file}`, details: { file } },
      );
    }
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES);
    let length = 0;
    for (;;) {
      const count = readSync(descriptor, buffer, length, buffer.length - length, null);
      length += count;
      if (count === 0 || length === buffer.length) break;
    }
    const text = buffer.subarray(0, length).toString('utf8').trim();
    buffer.fill(0);
    if (text.length < MIN_KEY_SECRET_LENGTH) throw secretFileError(file, 'is damaged (too short)');
    return createSecretKey(Buffer.from(text, 'utf8'));
  } finally {
    closeSync(descriptor);
  }
}

/** Writes a new secret under a temporary name and links it into place unless another process did first. */
function createSecretFile(stateDir: string, file: string): void {
  try {
    mkdirSync(stateDir, { recursive: true });
  } catch (error) {
    throw secretFileError(file, 'cannot be created: its folder cannot be made', error);
  }
  const temporary = join(stateDir, `.${KEY_SECRET_FILE_NAME}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`);
  const text = Buffer.from(`${randomBytes(32).toString('hex')}\n`, 'utf8');
  try {
    const descriptor = openSync(temporary, 'wx', 0o600);
    try {
      // The umask may have taken bits from 0600 (never added any); fchmod sets it exactly.
      fchmodSync(descriptor, 0o600);
      for (let written = 0; written < text.length;) {
        written += writeSync(descriptor, text, written, text.length - written);
      }
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    try {
      linkSync(temporary, file);
    } catch (error) {
      // Another process linked its secret first: that one is the secret, for everyone.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } catch (error) {
    throw secretFileError(file, 'cannot be created', error);
  } finally {
    text.fill(0);
    rmSync(temporary, { force: true });
  }
}

function secretFileError(file: string, problem: string, cause?: unknown): SwitchboardError {
  const reason = cause instanceof Error ? `: ${cause.message}` : '';
  return new SwitchboardError('STORE_ERROR', `key secret file ${file} ${problem}${reason}`, {
    hint: `check the state folder's permissions, or set ${KEY_SECRET_VARIABLE}; deleting the file makes a new secret, and every virtual key made before stops working`,
    details: { file },
    ...(cause === undefined ? {} : { cause }),
  });
}
