import { SwitchboardError } from '../core/errors.js';
import { parseJsonOr } from '../core/safe-json.js';
import type { SqlDatabase } from './sql/sql-database.js';

/**
 * A virtual key as the ledger keeps it: never the key itself, only its HMAC under the server secret
 * (`hash`) and the first characters that are safe to show (`prefix`).
 */
export interface VirtualKeyRecord {
  /** `key_` and a time-ordered id. */
  id: string;
  /** Unique among all keys, revoked ones included. */
  name: string;
  /** HMAC-SHA-256 hex of the key (src/keys/key-secret.ts). */
  hash: string;
  /** The key's first 12 characters. */
  prefix: string;
  /** Added to every call made with the key. */
  tags: Record<string, string>;
  /** The models the key may use; undefined for any. */
  models?: string[];
  /** Cap on dollars spent with the key since 00:00 UTC. */
  dailyUsd?: number;
  /** Requests per minute. */
  rpm?: number;
  /** Tokens (input plus output) per minute. */
  tpm?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Epoch milliseconds after which the key is refused. */
  expiresAt?: number;
  createdAt: number;
  /** Epoch milliseconds when it was revoked. */
  revokedAt?: number;
}

/** A key's requests and tokens counted in one rate window, every process's together. */
export interface KeyUsage {
  requests: number;
  tokens: number;
}

interface VirtualKeyRow {
  id: string;
  name: string;
  hash: string;
  prefix: string;
  tags: string;
  models: string | null;
  daily_usd: number | null;
  rpm: number | null;
  tpm: number | null;
  concurrency: number | null;
  expires_at: number | null;
  created_at: number;
  revoked_at: number | null;
}

const COLUMNS =
  'id, name, hash, prefix, tags, models, daily_usd, rpm, tpm, concurrency, expires_at, created_at, revoked_at';

/** The statements, in the SQL both dialects share. */
export const VIRTUAL_KEY_SQL = {
  // Only a taken name is a conflict to report; an id or hash that repeats is a bug and fails loudly.
  insertKey:
    `INSERT INTO virtual_keys (${COLUMNS}) VALUES (@id, @name, @hash, @prefix, @tags, @models, @daily_usd, ` +
    '@rpm, @tpm, @concurrency, @expires_at, @created_at, @revoked_at) ON CONFLICT (name) DO NOTHING',
  listKeys: `SELECT ${COLUMNS} FROM virtual_keys ORDER BY id`,
  findKey: `SELECT ${COLUMNS} FROM virtual_keys WHERE hash = ?`,
  // A second revoke keeps the first time.
  revokeKey:
    'UPDATE virtual_keys SET revoked_at = coalesce(revoked_at, @at) WHERE name = @target OR id = @target',
  countUsage:
    'INSERT INTO key_rate_windows (key_id, window_start, requests, tokens) VALUES (@key_id, @window_start, @requests, @tokens) ' +
    'ON CONFLICT (key_id, window_start) DO UPDATE SET requests = key_rate_windows.requests + excluded.requests, ' +
    'tokens = key_rate_windows.tokens + excluded.tokens RETURNING requests, tokens',
  pruneUsage: 'DELETE FROM key_rate_windows WHERE window_start < ?',
};

type Guarded = <T>(what: string, action: (db: SqlDatabase) => Promise<T>) => Promise<T>;

/** The ledger's virtual-key methods (see `Ledger`), over its guarded connection. */
export function virtualKeyMethods(guarded: Guarded, location: string) {
  const sql = VIRTUAL_KEY_SQL;
  return {
    async createVirtualKey(record: VirtualKeyRecord): Promise<void> {
      const { changes } = await guarded('cannot create a virtual key in', (db) =>
        db.run(sql.insertKey, keyRow(record)),
      );
      if (changes === 0) {
        throw new SwitchboardError(
          'KEY_EXISTS',
          `a virtual key named ${record.name} exists already in ${location}`,
          {
            hint: 'choose another --name, or revoke the old key and create one under a new name',
            details: { name: record.name },
          },
        );
      }
    },

    async listVirtualKeys(): Promise<VirtualKeyRecord[]> {
      return guarded('cannot read virtual keys from', async (db) =>
        (await db.all<VirtualKeyRow>(sql.listKeys)).map(keyRecord),
      );
    },

    async findVirtualKey(hash: string): Promise<VirtualKeyRecord | undefined> {
      return guarded('cannot read virtual keys from', async (db) => {
        const row = await db.get<VirtualKeyRow>(sql.findKey, [hash]);
        return row === undefined ? undefined : keyRecord(row);
      });
    },

    async revokeVirtualKey(nameOrId: string, at: number): Promise<boolean> {
      const { changes } = await guarded('cannot revoke a virtual key in', (db) =>
        db.run(sql.revokeKey, { target: nameOrId, at }),
      );
      return changes > 0;
    },

    async countKeyUsage(
      keyId: string,
      windowStart: number,
      requests: number,
      tokens: number,
    ): Promise<KeyUsage> {
      return guarded('cannot count virtual key usage in', async (db) => {
        const row = await db.get<KeyUsage>(sql.countUsage, {
          key_id: keyId,
          window_start: windowStart,
          requests,
          tokens,
        });
        return { requests: Number(row?.requests ?? requests), tokens: Number(row?.tokens ?? tokens) };
      });
    },

    async pruneKeyUsage(before: number): Promise<number> {
      return guarded(
        'cannot prune virtual key usage in',
        async (db) => (await db.run(sql.pruneUsage, [before])).changes,
      );
    },
  };
}

function keyRow(record: VirtualKeyRecord): Record<string, unknown> {
  return {
    id: record.id,
    name: record.name,
    hash: record.hash,
    prefix: record.prefix,
    tags: JSON.stringify(record.tags),
    models: record.models === undefined ? null : JSON.stringify(record.models),
    daily_usd: record.dailyUsd ?? null,
    rpm: record.rpm ?? null,
    tpm: record.tpm ?? null,
    concurrency: record.concurrency ?? null,
    expires_at: record.expiresAt ?? null,
    created_at: record.createdAt,
    revoked_at: record.revokedAt ?? null,
  };
}

function keyRecord(row: VirtualKeyRow): VirtualKeyRecord {
  const record: VirtualKeyRecord = {
    id: row.id,
    name: row.name,
    hash: row.hash,
    prefix: row.prefix,
    tags: stringRecord(parseJsonOr(row.tags, {})),
    createdAt: Number(row.created_at),
  };
  const models = row.models === null ? undefined : parseJsonOr(row.models, undefined);
  // A list that does not read back as names allows nothing rather than everything.
  if (row.models !== null)
    record.models = Array.isArray(models) ? models.filter((m) => typeof m === 'string') : [];
  if (row.daily_usd !== null) record.dailyUsd = Number(row.daily_usd);
  if (row.rpm !== null) record.rpm = Number(row.rpm);
  if (row.tpm !== null) record.tpm = Number(row.tpm);
  if (row.concurrency !== null) record.concurrency = Number(row.concurrency);
  if (row.expires_at !== null) record.expiresAt = Number(row.expires_at);
  if (row.revoked_at !== null) record.revokedAt = Number(row.revoked_at);
  return record;
}

function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
