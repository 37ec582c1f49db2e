import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

// One JSON POST to a `switchboard serve`, the client side of `route`/`call --server`, the background
// server and the prompt hook: each is a process that starts, sends one request and exits, so what the
// request loads counts. A plain `http:` request is written on a TCP socket (node:net): node:http
// costs about 8 ms to load and set up for one request, a quarter of `node -e 0`. It sends
// `Connection: close` and reads one answer framed as serve frames it (`Content-Length`; chunked and
// read-to-close are read too). `https:` goes through node:https.

/** The most an answer's status line and headers may hold. */
const MAX_HEAD_BYTES = 64 * 1024;

/** The most an answer may hold: a route decision or a call's result is far smaller. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** The request got no answer. `connected`: the server had taken the connection (it may have acted). */
export class PostFailure extends Error {
  readonly connected: boolean;

  constructor(message: string, connected: boolean, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PostFailure';
    this.connected = connected;
  }
}

export interface JsonPostOptions {
  /** The server's token, sent as `Authorization: Bearer`. */
  token?: string | undefined;
  /** A server that has not taken the connection by then counts as not answering. */
  connectTimeoutMs?: number;
  abortSignal?: AbortSignal;
}

/** POSTs `payload` (JSON text) to `target`: its status and body, or a PostFailure. */
export function postJson(
  target: URL,
  payload: string,
  { token, connectTimeoutMs, abortSignal }: JsonPostOptions = {},
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  };
  // node:http refuses such a header; written by hand it would add headers of its own.
  if (token !== undefined && /[\r\n]/.test(token)) {
    return Promise.reject(new PostFailure('the server token holds a line break', false));
  }
  return new Promise((resolve, reject) => {
    let connected = false;
    let settled = false;
    let cancel = () => {};
    const finish = (failure: PostFailure | undefined, answer?: { status: number; text: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      abortSignal?.removeEventListener('abort', onAbort);
      if (failure === undefined) resolve(answer as { status: number; text: string });
      else {
        cancel();
        reject(failure);
      }
    };
    const failed = (error: NodeJS.ErrnoException) =>
      finish(
        error instanceof PostFailure
          ? error
          : new PostFailure(
              connected
                ? error.message
                : error.code === 'ECONNREFUSED'
                  ? 'connection refused'
                  : (error.code ?? error.message),
              connected,
              { cause: error },
            ),
      );
    const onConnect = () => {
      connected = true;
      clearTimeout(timer);
    };
    const onAbort = () => finish(new PostFailure('aborted', connected));
    const timer =
      connectTimeoutMs === undefined
        ? undefined
        : setTimeout(
            () => finish(new PostFailure(`no connection within ${connectTimeoutMs} ms`, false)),
            connectTimeoutMs,
          );
    if (abortSignal?.aborted === true) return onAbort();
    abortSignal?.addEventListener('abort', onAbort, { once: true });

    if (target.protocol === 'https:') {
      const { request } = process.getBuiltinModule('node:https');
      const outgoing = request(target, { method: 'POST', agent: false, headers });
      cancel = () => outgoing.destroy();
      outgoing.once('socket', (tls) => {
        if (tls.connecting) tls.once('secureConnect', onConnect);
        else onConnect();
      });
      outgoing.on('error', failed);
      outgoing.once('response', (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', failed);
        response.once('end', () =>
          finish(undefined, {
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      });
      outgoing.end(payload);
      return;
    }

    const { connect } = process.getBuiltinModule('node:net');
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const open: Socket = connect({ host, port: Number(target.port === '' ? 80 : target.port) });
    cancel = () => open.destroy();
    open.once('connect', onConnect);
    open.on('error', failed);
    const head = [
      `POST ${target.pathname}${target.search} HTTP/1.1`,
      `host: ${target.host}`,
      'connection: close',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    // Not `end()`: a server may take a half-closed connection for a client gone.
    open.write(`${head.join('\r\n')}\r\n\r\n${payload}`);
    let received = Buffer.alloc(0);
    const answer = () => {
      const read = readResponse(received, open.readableEnded);
      if (read === 'incomplete') return false;
      if (read === 'malformed') finish(new PostFailure(`a malformed answer from ${target.origin}`, true));
      else finish(undefined, read);
      open.destroy();
      return true;
    };
    open.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length > MAX_ANSWER_BYTES) {
        finish(new PostFailure(`an answer from ${target.origin} over ${MAX_ANSWER_BYTES} bytes`, true));
        return;
      }
      answer();
    });
    open.once('end', () => {
      if (!answer()) finish(new PostFailure('the connection closed before the answer ended', true));
    });
  });
}

/**
 * One HTTP/1.1 response in `data`: its status and body once whole (`ended`: the server closed the
 * connection, which ends a body without a length), `incomplete` before, `malformed` for what is no
 * HTTP answer.
 */
export function readResponse(
  data: Buffer,
  ended: boolean,
): { status: number; text: string } | 'incomplete' | 'malformed' {
  let end: number;
  let lines: string[];
  let status: string | undefined;
  // Interim answers (100 Continue) come before the real one: skipped, however many.
  for (;;) {
    end = data.indexOf('\r\n\r\n');
    if (end === -1) return ended || data.length > MAX_HEAD_BYTES ? 'malformed' : 'incomplete';
    if (end > MAX_HEAD_BYTES) return 'malformed';
    lines = data.subarray(0, end).toString('latin1').split('\r\n');
    status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '')?.[1];
    if (status === undefined) return 'malformed';
    if (!status.startsWith('1')) break;
    data = data.subarray(end + 4);
  }
  const fields = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const body = data.subarray(end + 4);
  const text = (bytes: Buffer) => ({ status: Number(status), text: bytes.toString('utf8') });
  if (/\bchunked\b/i.test(fields.get('transfer-encoding') ?? '')) {
    const decoded = dechunk(body);
    return decoded === 'incomplete' && ended
      ? 'malformed'
      : decoded === 'incomplete'
        ? decoded
        : text(decoded);
  }
  const length = fields.get('content-length');
  if (length !== undefined) {
    if (!/^\d+$/.test(length)) return 'malformed';
    if (body.length >= Number(length)) return text(body.subarray(0, Number(length)));
    return ended ? 'malformed' : 'incomplete';
  }
  return ended ? text(body) : 'incomplete';
}

function dechunk(body: Buffer): Buffer | 'incomplete' {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    if (lineEnd === -1) return 'incomplete';
    const size = Number.parseInt(body.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
    if (!Number.isFinite(size)) return 'incomplete';
    if (size === 0) return Buffer.concat(parts);
    if (body.length < lineEnd + 2 + size + 2) return 'incomplete';
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
