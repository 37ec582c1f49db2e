import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import { isPlainObject } from '../core/plain-object.js';
import { redactedJsonText } from '../core/secrets.js';

/** Largest request body accepted: a route request or a call's prompt (and schema) fit well within it. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The body as text, or `undefined` when it is larger than `limit` bytes. */
export function readBody(request: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string | undefined> {
  // Events rather than an async iterator: this runs on every request, and the iterator costs more
  // than a small body's parsing. Read to the end even when too large: stopping early destroys the
  // socket, and the client would get a reset instead of the 413.
  return new Promise((resolve, reject) => {
    // A client that hung up before the handler got here (an await in between) has already had its
    // 'close': no event would come, and the request would wait forever.
    if (request.destroyed && !request.readableEnded) {
      reject(new Error('the client closed the connection before sending its body'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    request.once('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
    request.once('close', () => {
      if (!request.complete) reject(new Error('the client closed the connection before sending its body'));
    });
  });
}

/** The 413 answer; the connection closes after it, so a client still sending stops. */
export function sendTooLarge(response: ServerResponse): SwitchboardError {
  const error = new SwitchboardError('INVALID_INPUT', `the body is larger than ${MAX_BODY_BYTES} bytes`, {
    hint: 'send a shorter prompt, or call in process (without --server)',
  });
  response.setHeader('connection', 'close');
  sendError(response, 413, error);
  return error;
}

/** A JSON object body, or an INVALID_INPUT error naming what is wrong and what to send (`example`). */
export function parseJsonObject(body: string, example: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new SwitchboardError('INVALID_INPUT', 'the body is not valid JSON', {
      hint: `send ${example} with content-type application/json`,
    });
  }
  if (!isPlainObject(value)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected the body to be a JSON object', {
      hint: `send ${example}`,
    });
  }
  return value;
}

/** Whether `value` is a flat object of strings (tags). */
export function isStringRecord(value: unknown): value is Record<string, string> {
  return isPlainObject(value) && Object.values(value).every((entry) => typeof entry === 'string');
}

export function toSwitchboardError(error: unknown): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  if (error instanceof Error && error.name === 'AbortError') {
    return new SwitchboardError('ABORTED', 'the request was aborted', { cause: error });
  }
  return new SwitchboardError('INTERNAL', error instanceof Error ? error.message : String(error), {
    hint: 'this is a bug in switchboard; please report it with the request that caused it',
    cause: error,
  });
}

/** The HTTP status of an error answer; the body's `code` is what a client maps to an exit code. */
export function statusFor(code: ErrorCode): number {
  if (code === 'INVALID_INPUT' || code === 'CONFIG_INVALID') return 400;
  if (code === 'ABORTED') return 503;
  if (code === 'FORBIDDEN') return 403;
  if (code === 'ENDPOINT_NOT_ALLOWED') return 403;
  if (code === 'INTERNAL' || code === 'STORE_ERROR') return 500;
  // The server's own disk is full or read-only: nothing was sent; a retry once it has room may pass.
  if (code === 'LEDGER_UNWRITABLE') return 507;
  if (code === 'RUN_NOT_FOUND') return 404;
  if (code === 'GATE_TAKEN' || code === 'WORKFLOW_LOCKED' || code === 'RUN_ENDED') return 409;
  // The rest come from the providers: an upstream failure.
  return 502;
}

export function methodNotAllowed(response: ServerResponse, allow: string): void {
  response.setHeader('allow', allow);
  sendError(response, 405, new SwitchboardError('INVALID_INPUT', `method not allowed; use ${allow}`));
}

/**
 * `{"error": {code, message, hint, retryable, provider, retryAfterMs, details}}`: enough for a client to exit
 * with the code and print the line the in-process command would have. An error that knows when to come
 * back (every provider's breaker open, a rate limit) says so in `retry-after` too, in whole seconds.
 */
export function sendError(response: ServerResponse, status: number, error: SwitchboardError): void {
  if (error.retryAfterMs !== undefined && Number.isFinite(error.retryAfterMs) && error.retryAfterMs >= 0) {
    response.setHeader('retry-after', String(Math.ceil(error.retryAfterMs / 1000)));
  }
  const { name: _name, ...fields } = error.toJSON();
  sendJson(response, status, { error: fields });
}

/**
 * Every answer passes through the secret redaction: a model or a server that echoes a key cannot leak it
 * here. Each string is redacted before JSON escapes it (a key holding `"` or `\\` would no longer match
 * once escaped), and the text again after.
 */
export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = `${redactedJson(value)}\n`;
  // A known length: one write, no chunked framing.
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

/** `value` as JSON with every known secret redacted, also those JSON would escape. */
export function redactedJson(value: unknown): string {
  return redactedJsonText(value);
}

/**
 * Gives every socket, request and response of `server` an 'error' listener. A write after a client
 * left, or a reset connection, is emitted as 'error'; with no one listening Node ends the process,
 * and every other caller's request with it. The connection is let go instead.
 */
export function absorbConnectionErrors(server: Server): void {
  server.on('connection', (socket) => socket.on('error', () => socket.destroy()));
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    request.on('error', () => response.destroy());
    response.on('error', () => response.destroy());
  });
}
