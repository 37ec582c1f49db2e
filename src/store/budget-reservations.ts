import { tagFilter } from './call-records.js';
import type { SqlDialect } from './sql/sql-database.js';

/** One cap a reservation must fit under: dollars spent since a moment, for a provider and/or a `key=value` tag. */
export interface SpendCap {
  /** Epoch milliseconds: spending before this does not count (the start of the day or month). */
  since: number;
  capUsd: number;
  provider?: string;
  tag?: string;
}

/** An estimated cost to hold against every applicable cap while a call is in flight. */
export interface SpendReservation {
  id: string;
  provider: string;
  tags: Readonly<Record<string, string>>;
  /** Epoch milliseconds; also the moment open reservations and spending are judged at. */
  createdAt: number;
  /** Epoch milliseconds after which the reservation no longer counts (its process may have died). */
  expiresAt: number;
  /**
   * The call's estimated cost. Undefined (a model with no price) takes all that is left under the
   * tightest cap, so such calls run one at a time under a cap instead of going unchecked.
   */
  amountUsd?: number;
  /**
   * Take less than `amountUsd` when less is left under a cap (an agent attempt, held to what it was
   * given): refused only by a cap already reached. @default false
   */
  shrinkToFit?: boolean;
  caps: readonly SpendCap[];
}

/** Where a cap stood when the reservation was judged, before it was added. */
export interface CapStanding {
  spentUsd: number;
  /** Held by other calls still in flight. */
  reservedUsd: number;
}

/** Whether the reservation was taken; when not, which cap refused it. */
export type ReservationOutcome =
  | { reserved: true; amountUsd: number; standings: CapStanding[] }
  | { reserved: false; capIndex: number; amountUsd?: number; standings: CapStanding[] };

/**
 * How long a reservation is kept after it expired: longer than any cap's period (a month), so the call of
 * a process that died in flight counts for as long as its period does.
 */
export const EXPIRED_RESERVATION_KEPT_MS = 32 * 24 * 60 * 60 * 1000;

/**
 * The reservation statements; `reservedFor` takes the same provider and tag filter as `spendSince`.
 * A reservation counts while it is open, and after it expired too, as spending made when it was taken
 * (`@since` is the cap's period start): only its own call's end releases it, and a process killed in
 * flight never gets there, although the provider may have charged for the call. Forgetting it at expiry
 * let a cap be passed.
 */
export function reservationSql(dialect: SqlDialect) {
  return {
    reservedFor:
      'SELECT sum(amount_usd) AS total FROM budget_reservations WHERE (expires_at > @now OR created_at >= @since) ' +
      `AND (CAST(@provider AS TEXT) IS NULL OR provider = @provider) AND ${tagFilter(dialect)}`,
    insertReservation:
      'INSERT INTO budget_reservations (id, created_at, expires_at, provider, tags, amount_usd) ' +
      'VALUES (@id, @created_at, @expires_at, @provider, @tags, @amount_usd)',
    deleteReservation: 'DELETE FROM budget_reservations WHERE id = ?',
    deleteExpiredReservations: 'DELETE FROM budget_reservations WHERE expires_at <= ?',
  };
}

/**
 * Decides a reservation from each cap's standing: refused by the first cap already reached (a cap of 0
 * is always reached) or that the estimate would pass; otherwise taken for the estimate, or for an
 * unpriced call all that is left under the tightest cap. With `shrinkToFit` an estimate larger than
 * what is left is taken down to it instead of refused.
 */
export function judgeReservation(
  caps: readonly SpendCap[],
  standings: readonly CapStanding[],
  amountUsd: number | undefined,
  shrinkToFit = false,
): { reserved: true; amountUsd: number } | { reserved: false; capIndex: number } {
  let headroom = Number.POSITIVE_INFINITY;
  for (const [index, cap] of caps.entries()) {
    const standing = standings[index] as CapStanding;
    const committed = standing.spentUsd + standing.reservedUsd;
    if (committed >= cap.capUsd) return { reserved: false, capIndex: index };
    if (!shrinkToFit && amountUsd !== undefined && committed + amountUsd > cap.capUsd)
      return { reserved: false, capIndex: index };
    headroom = Math.min(headroom, cap.capUsd - committed);
  }
  const left = Number.isFinite(headroom) ? headroom : 0;
  if (amountUsd === undefined) return { reserved: true, amountUsd: left };
  return { reserved: true, amountUsd: shrinkToFit ? Math.min(amountUsd, headroom) : amountUsd };
}
