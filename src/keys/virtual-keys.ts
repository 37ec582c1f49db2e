import type { KeyObject } from 'node:crypto';
import type { BudgetRule } from '../invoke/budget.js';
import type { Ledger, VirtualKeyRecord } from '../store/ledger.js';
import { hashVirtualKey, VIRTUAL_KEY_PREFIX } from './key-secret.js';

/** The tag every call made with a virtual key carries, its value the key's id. */
import { KEY_TAG } from '../store/call-records.js';

export { KEY_TAG };

/** What a virtual key may do; an absent limit is no limit. */
export interface VirtualKeyLimits {
  /** Dollars per UTC day, through the budget rules (`keyBudgetRules`). */
  readonly dailyUsd?: number;
  /** Requests per minute (fixed 60 s windows). */
  readonly rpm?: number;
  /** Tokens per minute, counted when a request ends (`KeyLimits`). */
  readonly tpm?: number;
  /** Requests in flight at once. */
  readonly concurrency?: number;
}

/** A virtual key the gateway accepted: who is calling and what they may do. Never the key itself. */
export interface VirtualKey {
  readonly id: string;
  readonly name: string;
  readonly tags: Readonly<Record<string, string>>;
  /** Models the key may use (see `modelScope`); undefined for any. */
  readonly models: readonly string[] | undefined;
  readonly limits: VirtualKeyLimits;
  /** Epoch milliseconds after which the key is refused; undefined for never. */
  readonly expiresAt: number | undefined;
}

/** Why a request's key was refused: no key, one never issued, one revoked, one past its expiry. */
export type KeyRefusal = 'missing' | 'unknown' | 'revoked' | 'expired';

export type KeyAuthentication =
  { ok: true; key: VirtualKey } | { ok: false; reason: KeyRefusal; message: string };

export interface KeyDirectoryOptions {
  /** Where the keys are: any ledger from `openLedger` (SQLite or PostgreSQL). */
  ledger: Pick<Ledger, 'listVirtualKeys' | 'findVirtualKey'>;
  /** The server secret (`loadKeySecret`): the same one the keys were created with. */
  secret: KeyObject;
  /**
   * How often all keys are read again, in milliseconds: a key revoked or created by another process
   * takes effect within this.
   * @default 2000
   */
  refreshMs?: number;
  /**
   * Hashes remembered as unknown until the next refresh, at most; the oldest go first.
   * @default 1024
   */
  negativeCacheSize?: number;
  /**
   * Ledger lookups of keys not loaded yet between two refreshes, at most: a flood of random keys costs
   * the database this many reads per `refreshMs`, not one per request. Past it an unknown key is refused
   * without a lookup (a key created meanwhile works from the next refresh).
   * @default 32
   */
  maxLookupsPerRefresh?: number;
  /**
   * How long a request waits for the lookup of a key not loaded yet before it is refused as unknown: a
   * ledger waiting out a PostgreSQL restart (up to two minutes) must not hold the request that long.
   * @default 2000
   */
  lookupTimeoutMs?: number;
}

interface Entry {
  key: VirtualKey;
  revokedAt: number | undefined;
}

/** A well-formed key: `sbk_` and 43 base64url characters. Anything else is refused without hashing. */
const KEY_SHAPE = new RegExp(`^${VIRTUAL_KEY_PREFIX}[A-Za-z0-9_-]{43}$`);

/**
 * The virtual keys the gateway accepts, held in memory by hash: authenticating a known key reads no
 * database. All keys are read again every `refreshMs` in the background; a key not loaded yet costs one
 * ledger lookup (bounded per refresh, and remembered when unknown). The presented key is only ever
 * hashed with the server secret, never stored or logged.
 */
export class KeyDirectory {
  private readonly ledger: KeyDirectoryOptions['ledger'];
  private readonly secret: KeyObject;
  private readonly negativeCacheSize: number;
  private readonly maxLookups: number;
  private byHash = new Map<string, Entry>();
  /** Unknown hashes, to the time they may be looked up again; in insertion order, oldest first. */
  private readonly unknown = new Map<string, number>();
  private readonly lookups = new Map<string, Promise<Entry | undefined>>();
  private lookupsLeft: number;
  private readonly refreshMs: number;
  private readonly lookupTimeoutMs: number;
  private readonly timer: NodeJS.Timeout;
  private readonly loaded: Promise<void>;
  private refreshing: Promise<void> | undefined;
  private failure: unknown;
  /** Whether a load ever succeeded: until then a request waits for one (and fails with it). */
  private loadedOnce = false;

  constructor({
    ledger,
    secret,
    refreshMs = 2000,
    negativeCacheSize = 1024,
    maxLookupsPerRefresh = 32,
    lookupTimeoutMs = 2000,
  }: KeyDirectoryOptions) {
    if (!Number.isFinite(refreshMs) || refreshMs <= 0) {
      throw new TypeError(`Expected "refreshMs" to be a positive number of milliseconds, got ${refreshMs}`);
    }
    this.ledger = ledger;
    this.secret = secret;
    this.refreshMs = refreshMs;
    this.lookupTimeoutMs = lookupTimeoutMs;
    this.negativeCacheSize = negativeCacheSize;
    this.maxLookups = maxLookupsPerRefresh;
    this.lookupsLeft = maxLookupsPerRefresh;
    this.loaded = this.refresh();
    // Seen by ready() and authenticate(); handled here so a directory never asked is no crash.
    this.loaded.catch(() => undefined);
    this.timer = setInterval(() => {
      void this.refresh().catch(() => undefined);
    }, refreshMs);
    this.timer.unref();
  }

  /** Resolves once the keys are loaded; rejects with the ledger's error when the first load failed. */
  ready(): Promise<void> {
    return this.loaded;
  }

  /** The error of the last refresh, when it failed (the keys loaded before stay in use). */
  get lastRefreshError(): unknown {
    return this.failure;
  }

  /** Reads every key again now (the background refresh does this every `refreshMs`). */
  refresh(): Promise<void> {
    this.refreshing ??= this.ledger
      .listVirtualKeys()
      .then(
        (records) => {
          const byHash = new Map<string, Entry>();
          for (const record of records) byHash.set(record.hash, entryOf(record));
          this.byHash = byHash;
          this.loadedOnce = true;
          this.lookupsLeft = this.maxLookups;
          this.failure = undefined;
        },
        (error: unknown) => {
          this.failure = error;
          throw error;
        },
      )
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  /**
   * Whether the presented key (from `readPresentedKey`) may call, and as whom. A key loaded already is
   * answered from memory.
   */
  async authenticate(presented: string | undefined, now: number = Date.now()): Promise<KeyAuthentication> {
    if (presented === undefined || presented === '') {
      return refusal('missing', 'no virtual key: send it as x-api-key or Authorization: Bearer');
    }
    if (!KEY_SHAPE.test(presented))
      return refusal('unknown', 'the virtual key is not one this server issued');
    // A first load that failed (the database was down at start) is tried again, not remembered.
    if (!this.loadedOnce) await (this.refreshing ?? this.refresh());
    const hash = hashVirtualKey(presented, this.secret);
    const entry = this.byHash.get(hash) ?? (await this.lookUp(hash, now));
    if (entry === undefined) return refusal('unknown', 'the virtual key is not one this server issued');
    const { key, revokedAt } = entry;
    // Revoked is revoked whatever the clocks say: another machine's may run ahead of this one's.
    if (revokedAt !== undefined) {
      return refusal(
        'revoked',
        `virtual key ${key.name} was revoked at ${new Date(revokedAt).toISOString()}`,
      );
    }
    if (key.expiresAt !== undefined && key.expiresAt <= now) {
      return refusal(
        'expired',
        `virtual key ${key.name} expired at ${new Date(key.expiresAt).toISOString()}`,
      );
    }
    return { ok: true, key };
  }

  /** Stops the background refresh. The ledger stays open: it is the caller's. */
  close(): void {
    clearInterval(this.timer);
  }

  /** One ledger lookup of a hash not loaded: a key created since the last refresh, or none. */
  private async lookUp(hash: string, now: number): Promise<Entry | undefined> {
    const until = this.unknown.get(hash);
    if (until !== undefined && until > now) return undefined;
    const running = this.lookups.get(hash);
    if (running !== undefined) return this.inTime(running);
    if (this.lookupsLeft <= 0) return undefined;
    this.lookupsLeft -= 1;
    const lookup = this.ledger.findVirtualKey(hash).then((record) => {
      if (record === undefined) {
        this.rememberUnknown(hash, now + this.refreshMs);
        return undefined;
      }
      const entry = entryOf(record);
      this.byHash.set(hash, entry);
      return entry;
    });
    this.lookups.set(hash, lookup);
    void lookup.then(
      () => this.lookups.delete(hash),
      () => this.lookups.delete(hash),
    );
    return this.inTime(lookup);
  }

  /** The lookup's answer, or none (unknown) when it takes longer than `lookupTimeoutMs`. */
  private inTime(lookup: Promise<Entry | undefined>): Promise<Entry | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.lookupTimeoutMs);
    });
    return Promise.race([lookup, late]).finally(() => clearTimeout(timer));
  }

  private rememberUnknown(hash: string, until: number): void {
    this.unknown.delete(hash);
    this.unknown.set(hash, until);
    while (this.unknown.size > this.negativeCacheSize) {
      const oldest = this.unknown.keys().next().value as string;
      this.unknown.delete(oldest);
    }
  }
}

function refusal(reason: KeyRefusal, message: string): KeyAuthentication {
  return { ok: false, reason, message };
}

function entryOf(record: VirtualKeyRecord): Entry {
  const limits: { -readonly [Name in keyof VirtualKeyLimits]: VirtualKeyLimits[Name] } = {};
  if (record.dailyUsd !== undefined) limits.dailyUsd = record.dailyUsd;
  if (record.rpm !== undefined) limits.rpm = record.rpm;
  if (record.tpm !== undefined) limits.tpm = record.tpm;
  if (record.concurrency !== undefined) limits.concurrency = record.concurrency;
  const key: VirtualKey = Object.freeze({
    id: record.id,
    name: record.name,
    tags: Object.freeze({ ...record.tags }),
    models: record.models === undefined ? undefined : Object.freeze([...record.models]),
    limits: Object.freeze(limits),
    expiresAt: record.expiresAt,
  });
  return { key, revokedAt: record.revokedAt };
}

/**
 * The budget rule a key's `dailyUsd` makes, scoped by the key's tag (`keyTags`), for the call's
 * `budget.rules` beside the configured ones; none when the key has no daily cap.
 */
export function keyBudgetRules(key: VirtualKey): BudgetRule[] {
  const { dailyUsd } = key.limits;
  return dailyUsd === undefined ? [] : [{ tag: `${KEY_TAG}=${key.id}`, dailyUsd }];
}

/**
 * The tags a call made with the key carries: the key's own, and `switchboard.key: <id>` (which wins over
 * a tag of that name), so the configured tag budgets and `keyBudgetRules` count what it spends.
 */
export function keyTags(key: VirtualKey): Record<string, string> {
  return { ...key.tags, [KEY_TAG]: key.id };
}

/** Request headers as Node's `http` gives them, or a fetch `Headers`. */
export type RequestHeaders =
  Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

/**
 * The key a request presents: `x-api-key` (what Claude Code sends with `ANTHROPIC_API_KEY`), else
 * `Authorization: Bearer …` (with `ANTHROPIC_AUTH_TOKEN`); undefined when it has neither.
 */
export function readPresentedKey(headers: RequestHeaders): string | undefined {
  const header = (name: string): string | undefined => {
    if (typeof headers.get === 'function')
      return (headers as { get(name: string): string | null }).get(name) ?? undefined;
    const value = (headers as Readonly<Record<string, string | readonly string[] | undefined>>)[name];
    return typeof value === 'string' ? value : value?.[0];
  };
  const apiKey = header('x-api-key')?.trim();
  if (apiKey !== undefined && apiKey !== '') return apiKey;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header('authorization') ?? '');
  return match?.[1];
}
