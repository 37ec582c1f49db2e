import type { KeyObject } from 'node:crypto';
import { SwitchboardError } from '../core/errors.js';
import { timeOrderedId } from '../core/time-ordered-id.js';
import type { Ledger, VirtualKeyRecord } from '../store/ledger.js';
import { generateVirtualKey, hashVirtualKey, virtualKeyPrefix } from './key-secret.js';
import { KEY_TAG, type VirtualKeyLimits } from './virtual-keys.js';

export interface IssueVirtualKeyOptions {
  /** The ledger the gateway reads its keys from. */
  ledger: Pick<Ledger, 'createVirtualKey'>;
  /** The server secret (`loadKeySecret`) the gateway hashes presented keys with. */
  secret: KeyObject;
  /** Unique, letters, digits, `.`, `_` and `-`, up to 64 characters; not starting with `key_` (ids do). */
  name: string;
  /** Added to every call made with the key. */
  tags?: Readonly<Record<string, string>>;
  /** The models it may use (see `modelScope`); any when absent. */
  models?: readonly string[];
  /** Dollars per UTC day; 0 blocks every call. */
  dailyUsd?: number;
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per minute. */
  tpm?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Epoch milliseconds after which the key is refused. */
  expiresAt?: number;
  /** @default Date.now() */
  now?: number;
}

/** A key as `keys list` shows it: never the key or its hash. */
export interface ListedVirtualKey {
  name: string;
  id: string;
  /** The key's first 12 characters. */
  prefix: string;
  tags: Record<string, string>;
  /** Null for any model. */
  models: string[] | null;
  limits: VirtualKeyLimits;
  /** ISO 8601 times; null for never / not revoked. */
  expires: string | null;
  revoked: string | null;
  created: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const TAG_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Makes a new virtual key and stores its hash: the returned `key` is the only time it exists outside
 * the caller's hands.
 *
 * @throws SwitchboardError `INVALID_INPUT` for a bad name, tag, model list or limit; `KEY_EXISTS` when
 *   the name is taken.
 */
export async function issueVirtualKey(
  options: IssueVirtualKeyOptions,
): Promise<{ key: string; listed: ListedVirtualKey }> {
  const { ledger, secret, name, tags = {}, models, now = Date.now() } = options;
  checkName(name);
  checkTags(tags);
  if (models !== undefined) checkModels(models);
  checkLimit('dailyUsd', options.dailyUsd, { whole: false, min: 0 });
  checkLimit('rpm', options.rpm, { whole: true, min: 1 });
  checkLimit('tpm', options.tpm, { whole: true, min: 1 });
  checkLimit('concurrency', options.concurrency, { whole: true, min: 1 });
  if (options.expiresAt !== undefined && !(Number.isFinite(options.expiresAt) && options.expiresAt > now)) {
    throw invalid(
      `Expected "expiresAt" to be a time after now, got ${String(options.expiresAt)}`,
      'pass --expires 30d (or 12h, 90m)',
    );
  }
  const key = generateVirtualKey();
  const record: VirtualKeyRecord = {
    id: `key_${timeOrderedId()}`,
    name,
    hash: hashVirtualKey(key, secret),
    prefix: virtualKeyPrefix(key),
    tags: { ...tags },
    createdAt: now,
  };
  if (models !== undefined) record.models = [...models];
  for (const limit of ['dailyUsd', 'rpm', 'tpm', 'concurrency', 'expiresAt'] as const) {
    const value = options[limit];
    if (value !== undefined) record[limit] = value;
  }
  await ledger.createVirtualKey(record);
  return { key, listed: listedVirtualKey(record) };
}

/** What may be shown of a stored key. */
export function listedVirtualKey(record: VirtualKeyRecord): ListedVirtualKey {
  const limits: { -readonly [Name in keyof VirtualKeyLimits]: VirtualKeyLimits[Name] } = {};
  for (const limit of ['dailyUsd', 'rpm', 'tpm', 'concurrency'] as const) {
    const value = record[limit];
    if (value !== undefined) limits[limit] = value;
  }
  const iso = (time: number | undefined) => (time === undefined ? null : new Date(time).toISOString());
  return {
    name: record.name,
    id: record.id,
    prefix: record.prefix,
    tags: { ...record.tags },
    models: record.models === undefined ? null : [...record.models],
    limits,
    expires: iso(record.expiresAt),
    revoked: iso(record.revokedAt),
    created: new Date(record.createdAt).toISOString(),
  };
}

function checkName(name: string): void {
  if (!NAME.test(name) || name.startsWith('key_')) {
    throw invalid(
      `virtual key name ${JSON.stringify(name)} is not valid`,
      'use letters, digits, ".", "_" and "-" (up to 64, not starting with key_), e.g. --name ci',
    );
  }
}

function checkTags(tags: Readonly<Record<string, string>>): void {
  for (const [tag, value] of Object.entries(tags)) {
    if (!TAG_NAME.test(tag) || tag === KEY_TAG || typeof value !== 'string') {
      throw invalid(
        `tag ${JSON.stringify(tag)} is not valid for a virtual key`,
        `write it as --tag name=value, the name of letters, digits, ".", "_" and "-"; ${KEY_TAG} is set by Switchboard`,
      );
    }
  }
}

function checkModels(models: readonly string[]): void {
  if (
    models.length === 0 ||
    models.some((model) => typeof model !== 'string' || model.trim() === '' || /[\s,]/.test(model))
  ) {
    throw invalid(
      'the model list is empty or has an empty name',
      'pass --models sonnet,haiku (or leave it out for any model)',
    );
  }
}

function checkLimit(
  name: string,
  value: number | undefined,
  { whole, min }: { whole: boolean; min: number },
): void {
  if (value === undefined) return;
  if (!Number.isFinite(value) || value < min || (whole && !Number.isInteger(value))) {
    const expected = whole ? `a whole number of ${min} or more` : `a number of dollars, ${min} or more`;
    throw invalid(
      `Expected "${name}" to be ${expected}, got ${String(value)}`,
      `leave it out for no ${name} limit`,
    );
  }
}

function invalid(message: string, hint: string): SwitchboardError {
  return new SwitchboardError('INVALID_INPUT', message, { hint });
}
