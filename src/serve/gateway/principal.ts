import type { IncomingHttpHeaders } from 'node:http';
import { createHash } from 'node:crypto';
import type { ClientCredential } from '../../core/call-types.js';
import { registerSecret } from '../../core/secrets.js';
import type { BudgetRule } from '../../invoke/budget.js';
import { readPresentedKey } from '../../keys/virtual-keys.js';
import { sameSecret } from '../auth.js';

/** Who a gateway request acts for: a virtual key, or the server's own token (a local client). */
export interface Principal {
  /** The key's id (`key_…`), or `server-token`. */
  id: string;
  /** The key's name, for the ledger and the logs. */
  name: string;
  /** Tags every attempt of this principal carries (the key's tags and `switchboard.key`). */
  tags: Readonly<Record<string, string>>;
  /** Budget rules of the key itself (its `--daily-usd`), beside the config's. */
  budgetRules: readonly BudgetRule[];
  /** The key's `--models`, which the gateway reads as a `modelScope`; undefined for any model. */
  models: readonly string[] | undefined;
  /** Takes one request's room under the key's limits, or says when to come back. */
  admit(): Admission | Promise<Admission>;
  /**
   * The client's own Anthropic key (`gateway.forward_client_key`): requests go only to Anthropic, with
   * this key instead of the configured one.
   */
  clientCredential?: ClientCredential;
}

export type Admission =
  { ok: true; release(tokensUsed: number): void } | { ok: false; retryAfterMs: number; message: string };

export type Authentication = { ok: true; principal: Principal } | { ok: false; message: string };

/** Resolves a request's credential to a principal. */
export interface GatewayAuth {
  authenticate(headers: IncomingHttpHeaders): Authentication | Promise<Authentication>;
}

const UNLIMITED: Admission = { ok: true, release() {} };

/** The server's own token as a principal: no scope, no limits, the config's budgets only. */
export function serverTokenPrincipal(): Principal {
  return {
    id: 'server-token',
    name: 'server token',
    tags: {},
    budgetRules: [],
    models: undefined,
    admit: () => UNLIMITED,
  };
}

/** An Anthropic key or OAuth token a client holds itself (never a virtual key: those start `sbk_`). */
const ANTHROPIC_CLIENT_KEY = /^sk-ant-[A-Za-z0-9_-]{20,}$/;

/**
 * A client's own Anthropic key as a principal (`gateway.forward_client_key`): it spends the client's
 * account, so it needs no key of ours; it reaches Anthropic only, in the header it came in. The ledger
 * knows it by a fingerprint, never the key.
 */
function clientKeyPrincipal(headers: IncomingHttpHeaders, given: string): Principal | undefined {
  if (!ANTHROPIC_CLIENT_KEY.test(given)) return undefined;
  registerSecret(given);
  const header = headers['x-api-key'] !== undefined ? 'x-api-key' : 'authorization';
  const fingerprint = createHash('sha256').update(given).digest('hex').slice(0, 12);
  return {
    id: `client-key:${fingerprint}`,
    name: `client key ${fingerprint}`,
    tags: {},
    budgetRules: [],
    models: undefined,
    admit: () => UNLIMITED,
    clientCredential: { header, value: given },
  };
}

/**
 * Accepts the server token; `next` (the virtual keys) decides every other credential, but for a
 * client's own Anthropic key when `forwardClientKey` allows it.
 */
export function withServerToken(
  token: string,
  next: GatewayAuth | undefined,
  { forwardClientKey = false }: { forwardClientKey?: boolean } = {},
): GatewayAuth {
  // A known secret, so every body the gateway sends upstream is cleaned of it (a client's tool that
  // printed its environment, say), as it is already when it came from SWITCHBOARD_SERVER_TOKEN.
  registerSecret(token);
  const principal = serverTokenPrincipal();
  return {
    authenticate(headers) {
      const given = readPresentedKey(headers);
      if (given === undefined) {
        return {
          ok: false,
          message:
            'no key: send a virtual key (switchboard keys create) as x-api-key or Authorization: Bearer',
        };
      }
      if (sameSecret(given, token)) return { ok: true, principal };
      if (forwardClientKey) {
        const client = clientKeyPrincipal(headers, given);
        if (client !== undefined) return { ok: true, principal: client };
      }
      if (next !== undefined) return next.authenticate(headers);
      return { ok: false, message: 'this key is not one this gateway knows' };
    },
  };
}
