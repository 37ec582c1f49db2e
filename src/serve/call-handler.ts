import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SwitchboardConfig } from '../core/config.js';
import { call } from '../invoke/call.js';
import type { ClaudeCodeProvider } from '../providers/claude-code/claude-code-provider.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { CooldownRecord } from '../store/call-records.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import type { CallRequest, CallResult } from '../core/call-types.js';
import {
  callOptions,
  callRequest,
  providerRegistry,
  resolveRole,
  type CallContext,
} from '../cli/call-setup.js';
import { redactSecrets } from '../core/secrets.js';
import { parseCallBody, type CallBody } from './call-body.js';
import { readBody, sendError, sendJson, sendTooLarge, statusFor, toSwitchboardError } from './http.js';

export interface CallServiceOptions {
  config: SwitchboardConfig;
  /** Claude Code processes kept warm for `claude:<poolModel>` calls; 0 for none. */
  poolSize: number;
  poolModel: string;
  /** The longest a call may run (ms): a request's `timeoutMs` is capped at it, and applies without one. */
  maxTimeoutMs: number;
  /** Hears of trouble outside any one request (a pool that cannot start). */
  onWarning: (message: string) => void;
}

/**
 * `POST /call` for the server's whole life: one provider registry (API clients and the Claude Code
 * warm pool made once), the ledger opened once, so each call pays only for itself.
 */
export class CallService {
  private readonly config: SwitchboardConfig;
  /** The server's one registry; the router's LLM tier uses it too. */
  readonly providers: ProviderRegistry;
  /** The longest one call (and one gateway request) may run: `--max-timeout`. */
  readonly maxTimeoutMs: number;
  /** By `storeText`: a request may ask for its prompt to be stored while the server's default is a hash. */
  private readonly ledgers = new Map<boolean, Ledger>();

  private readonly onWarning: (message: string) => void;
  private closing = false;

  constructor({ config, poolSize, poolModel, maxTimeoutMs, onWarning }: CallServiceOptions) {
    this.config = config;
    this.maxTimeoutMs = maxTimeoutMs;
    this.onWarning = onWarning;
    // Callers of a server choose specs, never where a key goes: only configured endpoints are called.
    this.providers = providerRegistry(config, {
      listedEndpointsOnly: true,
      ...(poolSize > 0 ? { pool: { size: poolSize, model: poolModel } } : {}),
    });
  }

  /** Starts the warm Claude Code processes, in the background: the server answers meanwhile. */
  warm(): void {
    const { pool } = this.providers.get('claude') as ClaudeCodeProvider;
    pool?.warm().catch((error: unknown) => {
      // A pool stopped by the server's own shutdown is not news.
      if (this.closing) return;
      this.onWarning(
        `the Claude Code warm pool did not start (${error instanceof Error ? error.message : String(error)}); claude: calls will start cold`,
      );
    });
  }

  async handle(request: IncomingMessage, response: ServerResponse, abortSignal: AbortSignal): Promise<void> {
    const text = await readBody(request);
    if (text === undefined) return void sendTooLarge(response);
    // A client that hangs up no longer needs the answer: stop the call (and its spending) for it.
    const clientGone = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) clientGone.abort();
    });
    try {
      const result = await this.run(parseCallBody(text), AbortSignal.any([abortSignal, clientGone.signal]));
      setWarningHeaders(response, result.warnings);
      sendJson(response, 200, result);
    } catch (error) {
      if (clientGone.signal.aborted) return;
      const known = toSwitchboardError(error);
      sendError(response, statusFor(known.code), known);
    }
  }

  /**
   * One call as `POST /call` makes it, for callers that are not HTTP requests (the MCP `call` tool):
   * the role resolved, the timeout capped at the server's, the ledger and the registry shared.
   */
  async run(
    body: CallBody,
    abortSignal: AbortSignal,
    events: Pick<CallRequest, 'onText'> & Pick<CallContext, 'onRetryWait'> = {},
  ): Promise<CallResult> {
    const chain = resolveRole(body.spec, this.config.call.roles);
    const timeoutMs = Math.min(body.timeoutMs ?? this.maxTimeoutMs, this.maxTimeoutMs);
    const { onText, onRetryWait } = events;
    return call(
      chain,
      callRequest({ ...body, timeoutMs }, { abortSignal, ...(onText === undefined ? {} : { onText }) }),
      callOptions(this.config, body, {
        providers: this.providers,
        ledger: this.ledger(body.storeText),
        ...(onRetryWait === undefined ? {} : { onRetryWait }),
      }),
    );
  }

  /** The server's ledger (opened once, by whether it stores text); undefined with the ledger off. */
  ledger(storeText: boolean | undefined): Ledger | undefined {
    if (!this.config.ledger.enabled) return undefined;
    const stored = storeText ?? this.config.ledger.storeText;
    let ledger = this.ledgers.get(stored);
    if (ledger === undefined) {
      ledger = openLedger({ stateDir: this.config.stateDir, storeText: stored });
      this.ledgers.set(stored, ledger);
    }
    return ledger;
  }

  /** The ledger's open and half-open circuit breakers (none without a ledger), for the metrics. */
  async breakers(): Promise<readonly CooldownRecord[]> {
    return (await this.ledger(undefined)?.activeCooldowns(0)) ?? [];
  }

  /** Stops the warm pool and closes the ledger; calls still running are the caller's to have aborted. */
  async close(): Promise<void> {
    this.closing = true;
    await this.providers.close();
    for (const ledger of this.ledgers.values()) await ledger.close();
    this.ledgers.clear();
  }
}

/**
 * The result's warnings also as `x-switchboard-warning` headers (one each), for clients that read the
 * status and headers before the body: an answer the ledger did not record is still a 200. Header values
 * carry printable ASCII only, so anything else becomes `?`; the text is redacted as the body is.
 */
function setWarningHeaders(response: ServerResponse, warnings: readonly string[]): void {
  if (warnings.length === 0) return;
  response.setHeader(
    'x-switchboard-warning',
    warnings.map((warning) => redactSecrets(warning).replace(/[^\x20-\x7e]/g, '?')),
  );
}
