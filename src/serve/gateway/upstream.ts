import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { WireEndpoint } from '../../core/call-types.js';
import type { Wire } from './dialects.js';

// What goes upstream and what comes back. Both directions are allow lists: a header not named here
// is not passed on, so a client's credentials, cookies and unknown `x-*` headers never reach a
// provider, and a provider's cookies or anything credential-like never reach the client.

/**
 * Request headers a client's request keeps on its way upstream (the credentials are the provider's own).
 * A wire's list goes only to its own vendor (the native lane): Claude Code's `x-app` and session id,
 * which Anthropic reads to tell Claude Code's traffic and its sessions apart, reach Anthropic and never
 * an OpenAI target.
 */
const REQUEST_HEADERS: Readonly<Record<Wire, readonly string[]>> = {
  anthropic: ['anthropic-version', 'accept', 'user-agent', 'x-app', 'x-claude-code-session-id'],
  chat: ['accept', 'user-agent', 'openai-organization', 'openai-project'],
  responses: ['accept', 'user-agent', 'openai-organization', 'openai-project'],
};

/** Response headers passed back: ids a client quotes in a bug report, and what tells it when to retry. */
const RESPONSE_HEADERS = new Set([
  'content-type',
  'request-id',
  'x-request-id',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'openai-processing-ms',
]);
const RESPONSE_HEADER_PREFIXES = ['anthropic-ratelimit-', 'x-ratelimit-'];

/** Which `anthropic-beta` tokens go to a provider: all, or those listed. */
export type BetaPolicy = 'all' | readonly string[];

/**
 * The headers of the upstream request: the kept client headers, `anthropic-beta` through `betas`,
 * the provider's credential headers, and no compression (usage is read as the bytes pass).
 */
export function upstreamHeaders(
  wire: Wire,
  client: IncomingHttpHeaders,
  endpoint: WireEndpoint,
  betas: BetaPolicy,
  length: number,
): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'accept-encoding': 'identity',
    'content-length': String(length),
  };
  for (const name of REQUEST_HEADERS[wire]) {
    const value = client[name];
    if (typeof value === 'string') headers[name] = value;
  }
  if (wire === 'anthropic') {
    headers['anthropic-version'] ??= '2023-06-01';
    const beta = allowedBetas(client['anthropic-beta'], betas);
    if (beta !== undefined) headers['anthropic-beta'] = beta;
  }
  for (const [name, value] of Object.entries(endpoint.headers)) headers[name] = value;
  return headers;
}

function allowedBetas(value: string | string[] | undefined, betas: BetaPolicy): string | undefined {
  if (value === undefined) return undefined;
  const tokens = (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((token) => token.trim())
    .filter((token) => token !== '');
  const kept = betas === 'all' ? tokens : tokens.filter((token) => betas.includes(token));
  return kept.length === 0 ? undefined : kept.join(',');
}

/** The upstream response headers a client may see. */
export function clientHeaders(upstream: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (typeof value !== 'string') continue;
    if (RESPONSE_HEADERS.has(name) || RESPONSE_HEADER_PREFIXES.some((prefix) => name.startsWith(prefix))) {
      headers[name] = value;
    }
  }
  return headers;
}

/** Connections kept open to each upstream: a new TCP (and TLS) handshake per request would be most of the cost. */
const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });

/** One request upstream; the caller destroys it to abort. */
export interface UpstreamRequest {
  /** Resolves with the response once its headers arrive; rejects when the connection fails first. */
  response: Promise<IncomingMessage>;
  abort(): void;
}

/**
 * Sends `body` to `url`. A kept-alive connection the upstream closed while it sat idle fails the moment
 * it is reused, before the upstream saw the request: that one case is sent again, once, on a new
 * connection (anything else is the attempt's failure, for the chain to handle).
 */
export function sendUpstream(url: URL, headers: OutgoingHttpHeaders, body: Buffer): UpstreamRequest {
  const https = url.protocol === 'https:';
  let current: ClientRequest | undefined;
  let aborted = false;
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    const send = (mayResend: boolean) => {
      const outgoing = (https ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers,
        agent: https ? httpsAgent : httpAgent,
      });
      current = outgoing;
      let answered = false;
      outgoing.once('response', (message) => {
        answered = true;
        resolve(message);
      });
      outgoing.once('error', (error: NodeJS.ErrnoException) => {
        const stale = outgoing.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        if (mayResend && stale && !answered && !aborted) send(false);
        else reject(error);
      });
      outgoing.end(body);
    };
    send(true);
  });
  // Nobody may be listening when an abort rejects it.
  response.catch(() => undefined);
  return {
    response,
    abort: () => {
      aborted = true;
      current?.destroy();
    },
  };
}

/** The URL of `path` under a base URL (`http://h/v1` + `/chat/completions`, `https://api.anthropic.com` + `/v1/messages`). */
export function upstreamUrl(baseUrl: string, path: string, search = ''): URL {
  const url = new URL(`${baseUrl}${path}`);
  url.search = search;
  return url;
}
