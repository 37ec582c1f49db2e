import type { SqlClient } from './sql/sql-database.js';
import type { SqliteDatabase } from './sql/sqlite-database.js';

/** `reservedFor`'s parameters. */
export interface HeldFilter {
  now: number;
  since: number;
  provider: string | null;
  tag_key: string | null;
  tag_value: string | null;
}

/** A budget_reservations row as the caps count it. */
interface HeldRow {
  createdAt: number;
  expiresAt: number;
  provider: string;
  /** Undefined when the row's tags are not a JSON object of strings: a tag filter then asks SQLite. */
  tags: Readonly<Record<string, string>> | undefined;
  amountUsd: number;
}

/** A budget_reservations row as written (`insertReservation`'s parameters) and read. */
export interface ReservationRow {
  id: string;
  created_at: number;
  expires_at: number;
  provider: string;
  tags: string;
  amount_usd: number;
}

// In rowid order, the order `reservedFor`'s scan sums them in, so both sums round alike.
const SELECT_ROWS =
  'SELECT id, created_at, expires_at, provider, tags, amount_usd FROM budget_reservations ORDER BY rowid';
// Changes when another connection (another process, or another connection of this one) commits to the file.
const DATA_VERSION = 'PRAGMA data_version';

/**
 * The budget_reservations rows of one SQLite connection, kept in memory beside the table, so a budget
 * check sums what is held without reading the table each time. The copy is trusted only while
 * `PRAGMA data_version` shows that no other connection has committed since it was read; otherwise it is
 * read again, inside the check's `BEGIN IMMEDIATE` (the write lock held, so nobody writes in between).
 * This connection's own changes are applied as they commit (`TransactionOptions.afterCommit`), before
 * any other statement of the process runs, so the next check never sees the copy behind the table.
 */
export class HeldReservations {
  private readonly rows = new Map<string, HeldRow>();
  /** `data_version` when `rows` last equalled the table; undefined: read the table again. */
  private version: number | undefined;

  /**
   * Inside a reservation's transaction, before its first write: reads the table again when another
   * connection committed since the copy was made.
   */
  async refresh(client: SqlClient): Promise<void> {
    const version = (await client.get<{ data_version: number }>(DATA_VERSION))?.data_version;
    if (version !== undefined && version === this.version) return;
    this.rows.clear();
    for (const row of await client.all<ReservationRow>(SELECT_ROWS)) this.added(row);
    this.version = version;
  }

  /**
   * What `reservedFor` would sum with these parameters (`tag_key` null: no tag filter) once the rows
   * expired by `expiredBy` are deleted; undefined when only SQLite can say: a key its quoted JSON path
   * `$."key"` reads differently (a double quote, a backslash or NUL in it), or a row whose tags are not
   * an object of strings.
   */
  heldFor(filter: HeldFilter, expiredBy: number): number | undefined {
    const { now, since, provider, tag_key: key, tag_value: value } = filter;
    if (key !== null && /["\\\0]/.test(key)) return undefined;
    const sum = new NeumaierSum();
    for (const row of this.rows.values()) {
      // Deleted by this transaction's `deleteExpiredReservations`, which the copy applies at commit.
      if (row.expiresAt <= expiredBy) continue;
      if (!(row.expiresAt > now || row.createdAt >= since)) continue;
      if (provider !== null && row.provider !== provider) continue;
      if (key !== null) {
        if (row.tags === undefined) return undefined;
        if (!Object.hasOwn(row.tags, key) || row.tags[key] !== value) continue;
      }
      sum.add(row.amountUsd);
    }
    return sum.total();
  }

  /** After the commit that inserted the row. */
  added(row: ReservationRow): void {
    this.rows.set(row.id, heldRow(row));
  }

  /** After the commit that deleted the row (or found it gone). */
  removed(id: string): void {
    this.rows.delete(id);
  }

  /** After the commit of `deleteExpiredReservations` with this bound. */
  expiredBy(bound: number): void {
    for (const [id, row] of this.rows) if (row.expiresAt <= bound) this.rows.delete(id);
  }

  /** After a write whose outcome is unknown (its commit failed): the next check reads the table. */
  forget(): void {
    this.version = undefined;
  }
}

const copies = new WeakMap<SqliteDatabase, HeldReservations>();

/**
 * The copy of a connection's reservations. One per connection, not per ledger: the ledgers of one process
 * on one file share its connection, and so its `data_version`, which their writes do not change.
 */
export function heldReservationsOf(database: SqliteDatabase): HeldReservations {
  let copy = copies.get(database);
  if (copy === undefined) {
    copy = new HeldReservations();
    copies.set(database, copy);
  }
  return copy;
}

function heldRow(row: ReservationRow): HeldRow {
  return {
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    provider: row.provider,
    tags: stringTags(row.tags),
    amountUsd: row.amount_usd,
  };
}

function stringTags(text: string): Record<string, string> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const values = Object.values(parsed as Record<string, unknown>);
  return values.every((value) => typeof value === 'string') ? (parsed as Record<string, string>) : undefined;
}

/** SQLite's `sum()` of REAL values (Kahan-Babuska-Neumaier since 3.43), so a cap's edge falls the same way. */
class NeumaierSum {
  private sum = 0;
  private error = 0;

  add(value: number): void {
    const next = this.sum + value;
    this.error += Math.abs(this.sum) > Math.abs(value) ? this.sum - next + value : value - next + this.sum;
    this.sum = next;
  }

  total(): number {
    return this.sum + this.error;
  }
}
