import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenUsage, WireEndpoint } from '../../core/call-types.js';
import type { SwitchboardConfig } from '../../core/config.js';
import { isSwitchboardError, type ErrorCode } from '../../core/errors.js';
import { isPlainObject } from '../../core/plain-object.js';
import { costOf, DEFAULT_PRICES, type ModelPrice } from '../../core/prices.js';
import { redactJsonText, redactSecrets } from '../../core/secrets.js';
import { call } from '../../invoke/call.js';
import { configCallOptions } from '../../cli/call-setup.js';
import { timeOrderedId } from '../../core/time-ordered-id.js';
import {
  estimateCostOfChars,
  reserveBudget,
  type BudgetReservation,
  type BudgetRule,
} from '../../invoke/budget.js';
import type { ProviderRegistry } from '../../providers/registry.js';
import { KEY_NAME_TAG, KEY_TAG, type CallAttemptRecord } from '../../store/call-records.js';
import type { RouteMetrics } from '../../observe/prometheus.js';
import type { Ledger } from '../../store/ledger.js';
import { readBody } from '../http.js';
import { checkRequest, type GuardSettings } from '../request-guard.js';
import { DIALECTS, type Dialect } from './dialects.js';
import {
  gatewayScope,
  listGatewayModels,
  resolveGatewayModel,
  type GatewayTarget,
  type Wire,
} from './models.js';
import { routeRequest } from './claude-code-routing.js';
import type { Admission, Authentication, GatewayAuth, Principal } from './principal.js';
import {
  ClientStream,
  jsonAttempt,
  streamAttempt,
  type AttemptOutcome,
  type UpstreamFailure,
} from './relay.js';
import { upstreamHeaders, upstreamUrl, type BetaPolicy } from './upstream.js';
import { toCallRequest, translatedWriter, untranslatable } from './translate.js';
import { genAiProviderName, tracingEnabled, withSpan } from '../../observe/tracing.js';

/** The largest request body the gateway takes: the Messages API's own limit. */
export const MAX_GATEWAY_BODY_BYTES = 32 * 1024 * 1024;

export interface GatewayOptions {
  config: SwitchboardConfig;
  providers: ProviderRegistry;
  /** The ledger every attempt is recorded in; undefined with the ledger off. */
  ledger: () => Ledger | undefined;
  auth: GatewayAuth;
  guard: GuardSettings;
  /** A keep-alive goes out when the client has heard nothing for this long. @default config.gateway.keepAliveMs */
  keepAliveMs?: number;
  /** Upstream silence before the first content after which an attempt is given up for the next. @default config.gateway.stallMs */
  stallMs?: number;
  /** The longest one request may take. @default 600_000 */
  maxMs?: number;
  /** Counts every attempt and request (serve's --metrics). */
  metrics?: RouteMetrics;
}

/** The provider whose own wire each client wire is: the native lane passes bytes only between equals. */
const NATIVE_PROVIDER: Readonly<Record<Wire, string>> = {
  anthropic: 'anthropic',
  chat: 'openai',
  responses: 'openai',
};

/** The path under the provider's base URL for each wire (Anthropic's base has no `/v1`, OpenAI's has). */
const UPSTREAM_PATH: Readonly<Record<Wire, string>> = {
  anthropic: '/v1/messages',
  chat: '/chat/completions',
  responses: '/responses',
};

/** `switchboard serve`'s gateway: the vendors' own wire protocols under `/v1`. */
export class Gateway {
  private readonly options: GatewayOptions;
  private readonly keepAliveMs: number;
  private readonly stallMs: number;
  private readonly maxMs: number;
  /** The built-in prices with the config's over them, made once. */
  readonly prices: Readonly<Record<string, ModelPrice>>;

  constructor(options: GatewayOptions) {
    this.options = options;
    this.prices = { ...DEFAULT_PRICES, ...options.config.call.prices };
    this.keepAliveMs = options.keepAliveMs ?? options.config.gateway.keepAliveMs;
    this.stallMs = options.stallMs ?? options.config.gateway.stallMs;
    this.maxMs = options.maxMs ?? 600_000;
  }

  /** Gateway requests in flight now, against `gateway.max_concurrent`. */
  private inFlight = 0;

  async handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const dialect = dialectOfPath(url.pathname, request);
    // The cap comes first: a request over it has touched no key's limits, no budget and no provider.
    const { maxConcurrent } = this.options.config.gateway;
    if (this.inFlight >= maxConcurrent) {
      this.options.metrics?.observeGatewayOverloaded(dialect.wire);
      const status = dialect.wire === 'anthropic' ? 529 : 429;
      return sendDialectError(
        response,
        dialect,
        status,
        `the gateway has ${maxConcurrent} requests in flight, its gateway.max_concurrent; retry in a moment`,
        { 'retry-after': '1', 'x-should-retry': 'true' },
      );
    }
    this.inFlight++;
    try {
      await this.tracedDispatch(request, response, url, dialect);
    } finally {
      this.inFlight--;
    }
  }

  /**
   * The request in an HTTP server span (its calls and attempts under it), parented under the client's
   * own `traceparent` when it sends one.
   */
  private tracedDispatch(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    dialect: Dialect,
  ): Promise<void> {
    if (!tracingEnabled()) return this.dispatch(request, response, url, dialect);
    const method = request.method ?? 'GET';
    const traceparent = request.headers['traceparent'];
    return withSpan(
      `${method} ${url.pathname}`,
      {
        'http.request.method': method,
        'url.path': url.pathname,
        'switchboard.gateway.wire': dialect.wire,
      },
      async (span) => {
        await this.dispatch(request, response, url, dialect);
        span.set({ 'http.response.status_code': response.statusCode });
        if (response.statusCode >= 500)
          span.fail({ code: String(response.statusCode), message: `answered ${response.statusCode}` });
      },
      { kind: 'server', parent: typeof traceparent === 'string' ? traceparent : undefined },
    );
  }

  private async dispatch(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    dialect: Dialect,
  ): Promise<void> {
    let authentication: Authentication;
    try {
      authentication = await this.options.auth.authenticate(request.headers);
    } catch {
      // The keys could not be read (the database is away): the client may come back.
      return sendDialectError(response, dialect, 503, 'the gateway cannot check keys right now', {
        'retry-after': '5',
        'x-should-retry': 'true',
      });
    }
    if (!authentication.ok) {
      response.setHeader('www-authenticate', 'Bearer');
      response.setHeader('connection', 'close');
      return sendDialectError(response, dialect, 401, authentication.message, { 'x-should-retry': 'false' });
    }
    // A client that holds a key is not a page rebinding a name to loopback; a page's Origin and a body
    // not sent as JSON are still refused.
    const refusal = checkRequest(request, this.options.guard, true);
    if (refusal !== undefined) {
      response.setHeader('connection', 'close');
      return sendDialectError(response, dialect, refusal.status, refusal.error.message);
    }
    const principal = authentication.principal;
    const route = `${request.method ?? 'GET'} ${url.pathname}`;
    switch (route) {
      case 'POST /v1/messages':
        return this.exchange('anthropic', request, response, url, principal);
      case 'POST /v1/chat/completions':
        return this.exchange('chat', request, response, url, principal);
      case 'POST /v1/responses':
        return this.exchange('responses', request, response, url, principal);
      case 'POST /v1/messages/count_tokens':
        return this.countTokens(request, response, url, principal);
      case 'GET /v1/models':
        return this.models(request, response, principal);
      default: {
        const known = [
          '/v1/messages',
          '/v1/chat/completions',
          '/v1/responses',
          '/v1/messages/count_tokens',
          '/v1/models',
        ];
        if (known.includes(url.pathname)) {
          response.setHeader('allow', url.pathname === '/v1/models' ? 'GET' : 'POST');
          return sendDialectError(
            response,
            dialect,
            405,
            `${request.method ?? 'GET'} is not allowed on ${url.pathname}`,
          );
        }
        return sendDialectError(
          response,
          dialect,
          404,
          `the gateway does not serve ${url.pathname}; it serves ${known.join(', ')}`,
        );
      }
    }
  }

  private async exchange(
    wire: Wire,
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    principal: Principal,
  ): Promise<void> {
    const dialect = DIALECTS[wire];
    const read = await readJsonBody(request, response, dialect);
    if (read === undefined) return;
    const { body } = read;
    if (
      wire === 'responses' &&
      body['previous_response_id'] !== undefined &&
      body['previous_response_id'] !== null
    ) {
      return sendDialectError(
        response,
        dialect,
        400,
        'previous_response_id is not supported: this gateway keeps no responses; send the whole conversation in input',
      );
    }
    const admitted = await this.admitModel(wire, body, principal, response, dialect);
    if (admitted === undefined) return;
    const { requested, route, chain, admission } = admitted;
    const exchange = new Exchange(this, {
      wire,
      dialect,
      request,
      response,
      url,
      body,
      raw: read.text,
      requested,
      chain,
      principal,
      routeReason: route.rerouted ? `${route.requestClass}: ${route.reason}` : route.reason,
    });
    let tokens = 0;
    try {
      tokens = await exchange.run();
    } finally {
      admission.release(tokens);
    }
  }

  /**
   * What a key may do with a request's model, the one place it is decided for every route: the name
   * resolves to a chain whose every target is in the key's scope (a chain with one target out of it is
   * refused whole, not shortened), a route (`gateway.routes`, or a subagent tag the client wrote) is
   * followed only when its targets are in scope too, and the key's limits have room. Undefined once
   * the refusal has been sent.
   */
  private async admitModel(
    wire: Wire,
    body: Record<string, unknown>,
    principal: Principal,
    response: ServerResponse,
    dialect: Dialect,
    routing = true,
  ): Promise<
    | {
        requested: string;
        route: { model: string; requestClass: string; reason: string; rerouted: boolean };
        chain: GatewayTarget[];
        admission: Extract<Admission, { ok: true }>;
      }
    | undefined
  > {
    const requested = body['model'];
    if (typeof requested !== 'string' || requested.trim() === '') {
      sendDialectError(response, dialect, 400, 'model: the request names no model');
      return undefined;
    }
    const { config } = this.options;
    const scope = gatewayScope(principal.models, wire, config);
    let chain = resolveOrRefuse(requested, wire, config, response, dialect);
    if (chain === undefined) return undefined;
    const outside = scope.outside(chain);
    if (outside !== undefined) {
      sendDialectError(response, dialect, 403, outOfScope(requested, outside, principal), {
        'x-should-retry': 'false',
      });
      return undefined;
    }
    // Claude Code's request classes (background, think, long context, web search, subagent) may send
    // a request to another model than the one it named: `gateway.routes` of switchboard.yaml.
    const routed =
      routing && wire === 'anthropic'
        ? routeRequest(requested, body, config.gateway)
        : { model: requested, requestClass: 'default', reason: 'as requested', rerouted: false };
    let route = routed;
    if (routed.rerouted) {
      const target = resolveOrRefuse(routed.model, wire, config, response, dialect);
      if (target === undefined) return undefined;
      // A route is not a grant: a key keeps its own models, and a request whose route reaches one it
      // may not use goes to the model it named.
      if (scope.outside(target) === undefined) chain = target;
      else
        route = {
          model: requested,
          requestClass: 'default',
          reason: `${routed.requestClass}: not rerouted, the key may not use its target`,
          rerouted: false,
        };
    }
    const admission = await principal.admit();
    if (!admission.ok) {
      sendDialectError(response, dialect, 429, admission.message, {
        'retry-after': String(Math.max(1, Math.ceil(admission.retryAfterMs / 1000))),
        'x-should-retry': 'true',
      });
      return undefined;
    }
    return { requested, route, chain, admission };
  }

  private async countTokens(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    principal: Principal,
  ): Promise<void> {
    const dialect = DIALECTS.anthropic;
    const read = await readJsonBody(request, response, dialect);
    if (read === undefined) return;
    // A count is a request upstream with the provider's key: the key's scope and limits hold for it too.
    const admitted = await this.admitModel('anthropic', read.body, principal, response, dialect, false);
    if (admitted === undefined) return;
    const { chain, admission } = admitted;
    try {
      await this.count(read, request, response, url, principal, chain);
    } finally {
      admission.release(0);
    }
  }

  private async count(
    read: { text: string; body: Record<string, unknown> },
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    principal: Principal,
    chain: GatewayTarget[],
  ): Promise<void> {
    const dialect = DIALECTS.anthropic;
    for (const target of chain) {
      if (target.provider !== 'anthropic') continue;
      const endpoint = this.endpointOf(target, undefined, principal);
      if (endpoint === undefined) continue;
      const text = bodyFor(read.text, read.body, target.model, false);
      const bytes = Buffer.from(text, 'utf8');
      const outcome = await jsonAttempt(
        {
          url: upstreamUrl(endpoint.baseUrl, '/v1/messages/count_tokens', url.search),
          headers: upstreamHeaders('anthropic', request.headers, endpoint, this.betas(), bytes.length),
          body: bytes,
          dialect: COUNT_DIALECT,
          stallMs: this.stallMs,
          record: async () => {},
          onFirstByte: () => {},
          clientWantsUsage: false,
        },
        response,
        {},
        this.maxMs,
      );
      if (outcome.kind === 'answered') return;
      if (!outcome.failure.retryable) return sendFailure(response, dialect, outcome.failure);
    }
    // No Anthropic endpoint can count: an estimate, labelled as one.
    const estimate = Math.max(1, Math.ceil(read.text.length / 4));
    response.writeHead(200, {
      'content-type': 'application/json',
      'x-switchboard-estimate': 'characters/4',
    });
    response.end(JSON.stringify({ input_tokens: estimate }));
  }

  private async models(
    request: IncomingMessage,
    response: ServerResponse,
    principal: Principal,
  ): Promise<void> {
    const anthropic = request.headers['anthropic-version'] !== undefined;
    const { config } = this.options;
    const scope = gatewayScope(principal.models, anthropic ? 'anthropic' : 'chat', config);
    const body = listGatewayModels(
      config,
      (chain) => scope.outside(chain) === undefined,
      anthropic ? 'anthropic' : 'openai',
    );
    const text = JSON.stringify(body);
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  }

  /** The provider's wire endpoint and bound key, or undefined (with the reason kept) when it has none. */
  endpointOf(target: GatewayTarget, reasons?: string[], principal?: Principal): WireEndpoint | undefined {
    try {
      const provider = this.options.providers.get(target.provider);
      if (provider.wireEndpoint === undefined) {
        reasons?.push(`${target.spec}: the gateway cannot pass requests to ${target.provider} as they are`);
        return undefined;
      }
      const credential = principal?.clientCredential;
      if (credential !== undefined && target.provider !== 'anthropic') {
        reasons?.push(`${target.spec}: the client's own Anthropic key goes to Anthropic only`);
        return undefined;
      }
      return provider.wireEndpoint(
        target.baseUrl === undefined ? {} : { baseUrl: target.baseUrl },
        credential,
      );
    } catch (error) {
      reasons?.push(`${target.spec}: ${isSwitchboardError(error) ? error.message : String(error)}`);
      return undefined;
    }
  }

  /** The `anthropic-beta` tokens that may go to `provider` (`gateway.betas`). */
  betas(provider = 'anthropic'): BetaPolicy {
    return (this.options.config.gateway.betas as Readonly<Record<string, BetaPolicy>>)[provider] ?? [];
  }

  get settings() {
    return { keepAliveMs: this.keepAliveMs, stallMs: this.stallMs, maxMs: this.maxMs, options: this.options };
  }
}

/** The chain a model name stands for, or undefined once the client has its 400. */
function resolveOrRefuse(
  name: string,
  wire: Wire,
  config: SwitchboardConfig,
  response: ServerResponse,
  dialect: Dialect,
): GatewayTarget[] | undefined {
  try {
    return resolveGatewayModel(name, wire, config).chain;
  } catch (error) {
    sendDialectError(response, dialect, 400, isSwitchboardError(error) ? error.message : String(error));
    return undefined;
  }
}

/** Why a key may not send a request: the target out of its scope, what led there, and what to do. */
function outOfScope(requested: string, outside: GatewayTarget, principal: Principal): string {
  const via = requested.trim() === outside.spec ? '' : ` ("${requested}" resolves to it)`;
  const models = principal.models?.join(', ') ?? '';
  return `this key may not use ${outside.spec}${via}: ask for a model within its models (${models}), or use a key whose --models covers it`;
}

/** count_tokens answers `{input_tokens}`: its own reader of a 200. */
const COUNT_DIALECT: Dialect = {
  ...DIALECTS.anthropic,
  readAnswer(body) {
    if (!isPlainObject(body) || typeof body['input_tokens'] !== 'number') return undefined;
    return {
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      model: undefined,
    };
  },
};

interface ExchangeInput {
  wire: Wire;
  dialect: Dialect;
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  body: Record<string, unknown>;
  raw: string;
  requested: string;
  chain: GatewayTarget[];
  principal: Principal;
  routeReason: string;
}

/** One client request across the chain: each provider in turn until one answers or the client has an error. */
class Exchange {
  private readonly gateway: Gateway;
  private readonly input: ExchangeInput;
  private readonly callId = timeOrderedId();
  private attempts = 0;

  constructor(gateway: Gateway, input: ExchangeInput) {
    this.gateway = gateway;
    this.input = input;
  }

  /** Runs the exchange; the tokens it used, for the key's limits. */
  async run(): Promise<number> {
    const { input } = this;
    const { keepAliveMs, stallMs, maxMs, options } = this.gateway.settings;
    const stream = input.body['stream'] === true;
    const clientWantsUsage =
      input.wire !== 'chat' ||
      (isPlainObject(input.body['stream_options']) && input.body['stream_options']['include_usage'] === true);
    const extraHeaders = { 'x-switchboard-call-id': this.callId };
    const client = stream
      ? new ClientStream(input.response, input.dialect, keepAliveMs, extraHeaders)
      : undefined;
    const reasons: string[] = [];
    let last: UpstreamFailure | undefined;
    let tokens = 0;
    try {
      for (const target of input.chain) {
        if (target.provider !== NATIVE_PROVIDER[input.wire]) {
          const problem =
            input.principal.clientCredential === undefined
              ? untranslatable(input.wire, input.body)
              : "the client's own Anthropic key goes to Anthropic only";
          if (problem !== undefined) {
            reasons.push(`${target.spec}: not on the ${wireName(input.wire)} wire, and ${problem}`);
            continue;
          }
          const outcome = await this.translated(target, client, clientWantsUsage);
          tokens += outcome.tokens;
          if (outcome.failure === undefined) return tokens;
          last = outcome.failure;
          if (client?.gone === true || input.response.destroyed) return tokens;
          if (!outcome.failure.retryable) break;
          continue;
        }
        const endpoint = this.gateway.endpointOf(target, reasons, input.principal);
        if (endpoint === undefined) continue;
        const ledger = options.ledger();
        const attemptId = timeOrderedId();
        const tags = this.tags();
        let reservation: BudgetReservation;
        try {
          reservation = await reserveBudget(
            ledger,
            [...options.config.call.budgetRules, ...input.principal.budgetRules] as BudgetRule[],
            {
              id: attemptId,
              provider: target.provider,
              model: target.model,
              tags,
              estimateUsd: estimateCostOfChars(target.model, input.raw.length, options.config.call.prices),
              now: Date.now(),
              timeoutMs: maxMs,
            },
          );
        } catch (error) {
          if (isSwitchboardError(error) && error.code === 'BUDGET_EXCEEDED') {
            last = {
              status: 403,
              code: 'BUDGET_EXCEEDED',
              retryable: false,
              message: error.message,
              body: undefined,
              headers: { 'x-should-retry': 'false' },
            };
            break;
          }
          throw error;
        }
        const text = bodyFor(input.raw, input.body, target.model, stream && !clientWantsUsage);
        const bytes = Buffer.from(text, 'utf8');
        const started = performance.now();
        let firstByteMs: number | undefined;
        const attempt = ++this.attempts;
        const record = async (outcome: AttemptOutcome) => {
          const usage = outcome.usage;
          tokens += usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
          const row = this.attemptRecord(
            attemptId,
            attempt,
            target,
            outcome,
            performance.now() - started,
            firstByteMs,
            tags,
          );
          options.metrics?.observeGatewayAttempt(row, input.wire);
          await reservation.settle(row);
        };
        const attemptInput = {
          url: upstreamUrl(endpoint.baseUrl, UPSTREAM_PATH[input.wire], input.url.search),
          headers: upstreamHeaders(
            input.wire,
            input.request.headers,
            endpoint,
            this.gateway.betas(target.provider),
            bytes.length,
          ),
          body: bytes,
          dialect: input.dialect,
          stallMs,
          record,
          onFirstByte: () => {
            firstByteMs ??= performance.now() - started;
          },
          clientWantsUsage,
        };
        const outcome = await tracedAttempt(target, attempt, () =>
          client === undefined
            ? jsonAttempt(attemptInput, input.response, extraHeaders, maxMs)
            : streamAttempt(attemptInput, client, maxMs),
        );
        if (outcome.kind === 'answered') return tokens;
        await record(outcome).catch(() => undefined);
        last = outcome.failure;
        if (client?.gone === true || input.response.destroyed) return tokens;
        if (!outcome.failure.retryable) break;
      }
      this.fail(client, last, reasons);
      return tokens;
    } finally {
      client?.stop();
    }
  }

  /**
   * One attempt on another vendor's model through `call()` (which writes its own ledger rows, committed
   * before it returns): text streams as it comes; tool calls, usage and the end follow the answer.
   */
  private async translated(
    target: GatewayTarget,
    client: ClientStream | undefined,
    clientWantsUsage: boolean,
  ): Promise<{ tokens: number; failure?: UpstreamFailure }> {
    const { input } = this;
    const { options, maxMs } = this.gateway.settings;
    const writer = translatedWriter(input.wire, input.requested, clientWantsUsage);
    const request = toCallRequest(input.wire, input.body);
    const stopped = new AbortController();
    const onClose = () => {
      if (!input.response.writableFinished) stopped.abort();
    };
    input.response.once('close', onClose);
    const estimate = Math.ceil(input.raw.length / 4);
    let committed = false;
    request.tags = { ...this.tags(), 'switchboard.lane': 'translated' };
    request.abortSignal = stopped.signal;
    request.timeoutMs = maxMs;
    if (client !== undefined) {
      request.onText = (delta) => {
        if (!committed) client.write(writer.open(estimate), {});
        committed = true;
        client.write(writer.text(delta), {});
      };
    }
    const defaults = configCallOptions(options.config);
    try {
      const result = await call(target.spec, request, {
        ...defaults,
        providers: options.providers,
        ledger: options.ledger() ?? false,
        callId: this.callId,
        budget: {
          ...defaults.budget,
          rules: [...(defaults.budget?.rules ?? []), ...input.principal.budgetRules],
        },
      });
      const tokens = result.usage.inputTokens + result.usage.outputTokens;
      if (client === undefined) {
        const text = redactSecrets(JSON.stringify(writer.answer(result)));
        input.response.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          'x-switchboard-call-id': this.callId,
        });
        input.response.end(text);
        return { tokens };
      }
      if (!committed) client.write(writer.open(result.usage.inputTokens), {});
      const { body, end } = writer.close(result);
      client.write(body, {});
      client.end(end);
      return { tokens };
    } catch (error) {
      if (stopped.signal.aborted) return { tokens: 0 };
      const known = isSwitchboardError(error) ? error : undefined;
      const code: ErrorCode = known?.code ?? 'PROVIDER_ERROR';
      const status = statusOfCode(code, input.wire);
      const message = redactSecrets(known?.message ?? String(error));
      if (committed && client !== undefined) {
        client.end(input.dialect.earlyErrorEvent(errorTypeOf(input.dialect, status), message));
        return { tokens: 0 };
      }
      const retryable = known?.retryable ?? !['INVALID_INPUT', 'BUDGET_EXCEEDED'].includes(code);
      const headers: Record<string, string> = {};
      if (known?.retryAfterMs !== undefined)
        headers['retry-after'] = String(Math.ceil(known.retryAfterMs / 1000));
      return { tokens: 0, failure: { status, code, retryable, message, body: undefined, headers } };
    } finally {
      input.response.off('close', onClose);
    }
  }

  /** Nothing answered: the last failure in the client's dialect, or why no provider could be tried. */
  private fail(client: ClientStream | undefined, last: UpstreamFailure | undefined, reasons: string[]): void {
    const { dialect, response } = this.input;
    const failure: UpstreamFailure = last ?? {
      status: 502,
      code: 'PROVIDER_ERROR',
      retryable: false,
      message: `no provider of "${this.input.requested}" can take this request: ${reasons.join('; ')}`,
      body: undefined,
      headers: { 'x-should-retry': 'false' },
    };
    if (client !== undefined && client.started) {
      // A keep-alive already sent the 200: the failure can only be an error event.
      const type = errorTypeOf(dialect, failure.status);
      client.end(dialect.earlyErrorEvent(type, failure.message));
      return;
    }
    sendFailure(response, dialect, failure);
  }

  private tags(): Record<string, string> {
    return {
      ...this.input.principal.tags,
      [KEY_TAG]: this.input.principal.id,
      [KEY_NAME_TAG]: this.input.principal.name,
      'switchboard.gateway': this.input.wire,
      'switchboard.lane': 'native',
      'switchboard.model': this.input.requested,
      'switchboard.route': this.input.routeReason,
    };
  }

  private attemptRecord(
    id: string,
    attempt: number,
    target: GatewayTarget,
    outcome: AttemptOutcome,
    durationMs: number,
    firstByteMs: number | undefined,
    tags: Record<string, string>,
  ): CallAttemptRecord {
    const usage: TokenUsage = outcome.usage;
    const model = outcome.model ?? target.model;
    const success = outcome.kind === 'answered' && outcome.success;
    const errorCode: ErrorCode | undefined =
      outcome.kind === 'failed' ? outcome.failure.code : outcome.success ? undefined : outcome.errorCode;
    const record: CallAttemptRecord = {
      id,
      callId: this.callId,
      attempt,
      createdAt: Date.now(),
      provider: target.provider,
      spec: target.spec,
      modelRequested: target.model,
      modelUsed: model,
      success,
      durationMs: Math.round(durationMs),
      usage,
      costUsd: costOf(model, usage, this.gateway.prices),
      tags: firstByteMs === undefined ? tags : { ...tags, 'switchboard.ttfb_ms': firstByteMs.toFixed(1) },
    };
    if (errorCode !== undefined) record.errorCode = errorCode;
    return record;
  }
}

/** The HTTP status a client of `wire` gets for a `call()` error. */
function statusOfCode(code: ErrorCode, wire: Wire): number {
  switch (code) {
    case 'RATE_LIMITED':
      return 429;
    case 'OVERLOADED':
      return wire === 'anthropic' ? 529 : 503;
    case 'TIMEOUT':
    case 'IDLE_TIMEOUT':
      return 504;
    case 'BUDGET_EXCEEDED':
      return 403;
    case 'INVALID_INPUT':
      return 400;
    default:
      return 502;
  }
}

function wireName(wire: Wire): string {
  return wire === 'anthropic' ? 'Messages' : wire === 'chat' ? 'Chat Completions' : 'Responses';
}

/**
 * The body sent upstream: the client's bytes when the model is the one it named (and nothing else
 * changes), else the body with the chain's model; every known secret redacted (one pass, as every
 * request leaving the process). `addUsage`: Chat streams ask for the usage chunk, to count what is spent.
 */
function bodyFor(raw: string, body: Record<string, unknown>, model: string, addUsage: boolean): string {
  let text = raw;
  if (body['model'] !== model || addUsage) {
    const copy: Record<string, unknown> = { ...body, model };
    if (addUsage) {
      copy['stream_options'] = {
        ...(isPlainObject(body['stream_options']) ? body['stream_options'] : {}),
        include_usage: true,
      };
    }
    text = JSON.stringify(copy);
  }
  return redactJsonText(text);
}

/** The dialect of a path's errors: Anthropic's for its paths (and when the client sent `anthropic-version`). */
function dialectOfPath(path: string, request: IncomingMessage): Dialect {
  if (path.startsWith('/v1/messages')) return DIALECTS.anthropic;
  if (path.startsWith('/v1/chat') || path.startsWith('/v1/responses')) return DIALECTS.chat;
  return request.headers['anthropic-version'] !== undefined ? DIALECTS.anthropic : DIALECTS.chat;
}

function errorTypeOf(dialect: Dialect, status: number): string {
  const body = dialect.errorBody(status, '') as { error: { type: string } };
  return body.error.type;
}

/** An error in the client's dialect, with the status and headers that tell it whether to retry. */
/** A native-lane attempt (the client's own request relayed upstream) as a GenAI chat client span. */
function tracedAttempt(
  target: GatewayTarget,
  attempt: number,
  send: () => Promise<AttemptOutcome>,
): Promise<AttemptOutcome> {
  if (!tracingEnabled()) return send();
  return withSpan(
    `chat ${target.model}`,
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': genAiProviderName(target.provider),
      'gen_ai.request.model': target.model,
      'switchboard.provider.spec': target.spec,
      'switchboard.attempt': attempt,
    },
    async (span) => {
      const outcome = await send();
      span.set({
        'gen_ai.response.model': outcome.model,
        'gen_ai.usage.input_tokens': outcome.usage.inputTokens,
        'gen_ai.usage.output_tokens': outcome.usage.outputTokens,
      });
      if (outcome.kind === 'failed') span.fail(outcome.failure);
      else if (!outcome.success)
        span.fail({ code: outcome.errorCode ?? 'PROVIDER_ERROR', message: 'the stream failed' });
      return outcome;
    },
    { kind: 'client' },
  );
}

export function sendDialectError(
  response: ServerResponse,
  dialect: Dialect,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(dialect.errorBody(status, message));
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function sendFailure(response: ServerResponse, dialect: Dialect, failure: UpstreamFailure): void {
  if (response.headersSent) return void response.end();
  const headers: Record<string, string> = { ...failure.headers };
  headers['x-should-retry'] ??= String(failure.retryable);
  const body =
    failure.body !== undefined && isJsonText(failure.body)
      ? failure.body
      : JSON.stringify(dialect.errorBody(failure.status, failure.message));
  response.writeHead(failure.status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The request body as text and JSON object, or undefined once an error answer has been sent. */
async function readJsonBody(
  request: IncomingMessage,
  response: ServerResponse,
  dialect: Dialect,
): Promise<{ text: string; body: Record<string, unknown> } | undefined> {
  let text: string | undefined;
  try {
    text = await readBody(request, MAX_GATEWAY_BODY_BYTES);
  } catch {
    return undefined;
  }
  if (text === undefined) {
    response.setHeader('connection', 'close');
    sendDialectError(response, dialect, 413, `the body is larger than ${MAX_GATEWAY_BODY_BYTES} bytes`);
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    sendDialectError(response, dialect, 400, 'the body is not valid JSON');
    return undefined;
  }
  if (!isPlainObject(body)) {
    sendDialectError(response, dialect, 400, 'the body must be a JSON object');
    return undefined;
  }
  return { text, body };
}
