import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenUsage } from '../../core/call-types.js';
import type { ErrorCode } from '../../core/errors.js';
import { redactSecrets } from '../../core/secrets.js';
import { classifyStatus } from '../../providers/http-errors.js';
import { redactedAnswer, StreamRedactor } from './stream-redaction.js';
import type { Dialect } from './dialects.js';
import { MAX_SSE_EVENT_CHARS, SseSplitter, type SseEvent } from './sse.js';
import { clientHeaders, sendUpstream } from './upstream.js';
import type { OutgoingHttpHeaders } from 'node:http';

// One attempt of the native lane: the client's request goes to one provider as it is, and the answer
// comes back byte for byte, while this reads what it must (usage, the model, where the content starts).
//
// The commit boundary: until the first content event, nothing of the attempt has reached the client
// (message_start and its kin are held), so a failure is invisible and the next provider may answer.
// From the first content event on, the stream belongs to this provider: a failure ends it with an error
// event in the client's own dialect, never a made-up clean end, never a closed half tool call.

/** How an attempt ended. */
export type AttemptOutcome =
  /** The client has its answer (or, once committed, the stream's error): nothing more to try. */
  | {
      kind: 'answered';
      success: boolean;
      errorCode?: ErrorCode;
      usage: TokenUsage;
      model: string | undefined;
    }
  /** Nothing reached the client: the next provider may try, or the client gets this failure. */
  | { kind: 'failed'; failure: UpstreamFailure; usage: TokenUsage; model: string | undefined };

/** A failure before the commit, as the client would get it if nothing after it succeeds. */
export interface UpstreamFailure {
  status: number;
  code: ErrorCode;
  /** Another provider (or a retry later) may succeed. */
  retryable: boolean;
  message: string;
  /** The body to send: the upstream's own error body (already in the client's dialect), or one of ours. */
  body: string | undefined;
  /** Upstream headers a client may see (retry-after, request-id, x-should-retry). */
  headers: Record<string, string>;
}

/** What the client's side of the exchange is: its response, and what has gone out on it. */
export class ClientStream {
  readonly response: ServerResponse;
  private readonly dialect: Dialect;
  private readonly redactor: StreamRedactor;
  private lastWrite = performance.now();
  private timer: NodeJS.Timeout | undefined;
  /** Set when the client hung up before its answer was complete. */
  gone = false;

  constructor(
    response: ServerResponse,
    dialect: Dialect,
    keepAliveMs: number,
    extraHeaders: Record<string, string>,
  ) {
    this.response = response;
    this.dialect = dialect;
    this.redactor = new StreamRedactor(dialect.wire);
    this.extraHeaders = extraHeaders;
    response.once('close', () => {
      if (!response.writableFinished) this.gone = true;
      this.stop();
    });
    if (keepAliveMs > 0) {
      const tick = Math.max(5, Math.floor(keepAliveMs / 4));
      this.timer = setInterval(() => {
        if (performance.now() - this.lastWrite >= keepAliveMs) this.write(this.dialect.keepAlive, {});
      }, tick);
      this.timer.unref();
    }
  }

  private readonly extraHeaders: Record<string, string>;

  get started(): boolean {
    return this.response.headersSent;
  }

  /** Writes SSE text, sending the 200 and the stream's headers first if they have not gone yet. */
  write(text: string, upstreamHeaders: Record<string, string>): void {
    if (this.gone || this.response.writableEnded) return;
    if (!this.response.headersSent) {
      this.response.writeHead(200, {
        ...upstreamHeaders,
        ...this.extraHeaders,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
    }
    // The one redaction pass of what leaves on a stream: a provider's own events are passed as they
    // came, and a known secret in them (an echoed key) is no more the client's than in a JSON answer,
    // even cut across events (an event that may end in a secret's start waits for the next).
    const out = this.redactor.redact(text);
    if (out !== '') this.response.write(out);
    this.lastWrite = performance.now();
  }

  end(text?: string): void {
    this.stop();
    if (this.gone || this.response.writableEnded) return;
    if (text !== undefined) this.write(text, {});
    const held = this.redactor.flush();
    if (held !== '') this.response.write(held);
    this.response.end();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

export interface AttemptInput {
  url: URL;
  headers: OutgoingHttpHeaders;
  body: Buffer;
  dialect: Dialect;
  /** Milliseconds of upstream silence before the commit after which the attempt is given up. */
  stallMs: number;
  /** Called once the attempt's record is written, before the final event or body goes out. */
  record: (outcome: AttemptOutcome) => Promise<void>;
  /** Time of the first byte from upstream, for the ledger. */
  onFirstByte: () => void;
  /** Chat: the client asked for `stream_options.include_usage` (else the usage chunk the gateway asked for is not passed on). */
  clientWantsUsage: boolean;
}

function failure(
  status: number,
  code: ErrorCode,
  message: string,
  retryable: boolean,
  body?: string,
  headers: Record<string, string> = {},
): UpstreamFailure {
  return { status, code, retryable, message, body, headers };
}

/** Waits for the upstream response's headers, at most `ms`; the attempt is aborted after that. */
async function headersWithin<T = IncomingMessage>(
  pending: Promise<T>,
  ms: number,
  abort: () => void,
): Promise<T | 'stalled'> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<'stalled'>((resolve) => {
    timer = setTimeout(() => resolve('stalled'), ms);
  });
  try {
    const result = await Promise.race([pending, stalled]);
    if (result === 'stalled') abort();
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/** The whole body of a response, at most `limit` bytes (the rest is read and dropped). */
function readAll(message: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    message.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    message.once('end', () => resolve(Buffer.concat(chunks)));
    message.once('error', reject);
    message.once('aborted', () => reject(new Error('the provider closed the connection mid-answer')));
  });
}

const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;

/** A failed attempt's answer: its status and body as they came, for the client if nothing else answers. */
async function failedAnswer(upstream: IncomingMessage): Promise<UpstreamFailure> {
  const status = upstream.statusCode ?? 502;
  let text: string | undefined;
  try {
    text = redactSecrets((await readAll(upstream, MAX_ERROR_BYTES)).toString('utf8'));
  } catch {
    text = undefined;
  }
  const { code, retryable } = classifyStatus(status);
  return failure(
    status,
    code,
    `the provider answered ${status}`,
    retryable,
    text,
    clientHeaders(upstream.headers),
  );
}

function emptyUsage(): TokenUsage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

/** One non-streaming attempt: the answer is read whole, checked to be this wire's answer, recorded, then sent. */
export async function jsonAttempt(
  input: AttemptInput,
  response: ServerResponse,
  extraHeaders: Record<string, string>,
  maxMs: number,
): Promise<AttemptOutcome> {
  const upstreamRequest = sendUpstream(input.url, input.headers, input.body);
  const onClose = () => {
    if (!response.writableFinished) upstreamRequest.abort();
  };
  response.once('close', onClose);
  let usage = emptyUsage();
  const started = performance.now();
  try {
    const upstream = await headersWithin(upstreamRequest.response, maxMs, upstreamRequest.abort);
    if (upstream === 'stalled') {
      return failedOutcome(failure(504, 'TIMEOUT', `the provider sent nothing for ${maxMs} ms`, true), usage);
    }
    input.onFirstByte();
    if (upstream.statusCode !== 200) return failedOutcome(await failedAnswer(upstream), usage);
    // The whole answer within the request's time, not only its headers: a body that trickles without
    // end is given up.
    const bytes = await headersWithin(
      readAll(upstream, MAX_ANSWER_BYTES),
      Math.max(1, maxMs - (performance.now() - started)),
      upstreamRequest.abort,
    );
    if (bytes === 'stalled') {
      return failedOutcome(
        failure(504, 'TIMEOUT', `the provider's answer took longer than ${maxMs} ms`, true),
        usage,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const answer = input.dialect.readAnswer(parsed);
    if (answer === undefined) {
      return failedOutcome(
        failure(
          502,
          'PROVIDER_ERROR',
          'the provider answered 200 with something that is not an answer',
          true,
        ),
        usage,
      );
    }
    usage = answer.usage;
    const outcome: AttemptOutcome = { kind: 'answered', success: true, usage, model: answer.model };
    await input.record(outcome);
    const text = redactedAnswer(bytes.toString('utf8'), parsed);
    if (!response.destroyed) {
      response.writeHead(200, {
        ...clientHeaders(upstream.headers),
        ...extraHeaders,
        'content-length': Buffer.byteLength(text),
      });
      response.end(text);
    }
    return outcome;
  } catch (error) {
    return failedOutcome(
      failure(502, 'PROVIDER_UNAVAILABLE', `the provider could not be reached: ${messageOf(error)}`, true),
      usage,
    );
  } finally {
    response.off('close', onClose);
  }
}

function failedOutcome(failed: UpstreamFailure, usage: TokenUsage, model?: string): AttemptOutcome {
  return { kind: 'failed', failure: failed, usage, model };
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return String(error);
}

/** One streaming attempt, across the commit boundary (see the top of this file). */
export async function streamAttempt(
  input: AttemptInput,
  client: ClientStream,
  maxMs = 600_000,
): Promise<AttemptOutcome> {
  const { dialect } = input;
  const upstreamRequest = sendUpstream(input.url, input.headers, input.body);
  const reader = dialect.reader(input.clientWantsUsage);
  const onClose = () => upstreamRequest.abort();
  client.response.once('close', onClose);
  try {
    const upstream = await headersWithin(upstreamRequest.response, input.stallMs, upstreamRequest.abort);
    if (upstream === 'stalled') {
      return failedOutcome(
        failure(504, 'TIMEOUT', `the provider sent nothing for ${input.stallMs} ms`, true),
        reader.usage,
      );
    }
    input.onFirstByte();
    if (upstream.statusCode !== 200) return failedOutcome(await failedAnswer(upstream), reader.usage);
    if (!String(upstream.headers['content-type'] ?? '').includes('text/event-stream')) {
      upstream.resume();
      return failedOutcome(
        failure(502, 'PROVIDER_ERROR', 'the provider answered a stream request with something else', true),
        reader.usage,
      );
    }
    return await relayEvents(upstream, upstreamRequest.abort, input, client, reader, maxMs);
  } catch (error) {
    if (client.gone) return answeredAfterHangUp(reader);
    return failedOutcome(
      failure(502, 'PROVIDER_UNAVAILABLE', `the provider could not be reached: ${messageOf(error)}`, true),
      reader.usage,
    );
  } finally {
    client.response.off('close', onClose);
  }
}

function answeredAfterHangUp(reader: { usage: TokenUsage; model: string | undefined }): AttemptOutcome {
  return { kind: 'answered', success: false, errorCode: 'ABORTED', usage: reader.usage, model: reader.model };
}

function relayEvents(
  upstream: IncomingMessage,
  abort: () => void,
  input: AttemptInput,
  client: ClientStream,
  reader: ReturnType<Dialect['reader']>,
  maxMs: number,
): Promise<AttemptOutcome> {
  const { dialect } = input;
  const headers = clientHeaders(upstream.headers);
  delete headers['content-type'];
  return new Promise<AttemptOutcome>((resolve) => {
    const splitter = new SseSplitter();
    let held = '';
    let committed = false;
    /** No more upstream events are read: the attempt is ending. */
    let done = false;
    let resolved = false;
    let stall: NodeJS.Timeout | undefined;

    // The longest one request may take holds after the commit too: a stream that never ends does
    // not hold its connection, its key's concurrency and the provider's forever.
    const lifetime = setTimeout(() => {
      if (done) return;
      const message = `the answer took longer than ${maxMs} ms`;
      if (committed) return breakOff('api_error', `${message}; it is incomplete`, 'TIMEOUT');
      abort();
      settle(failedOutcome(failure(504, 'TIMEOUT', message, true), reader.usage, reader.model));
    }, maxMs);
    const settle = (outcome: AttemptOutcome) => {
      done = true;
      clearTimeout(stall);
      clearTimeout(lifetime);
      if (resolved) return;
      resolved = true;
      resolve(outcome);
    };
    const armStall = () => {
      clearTimeout(stall);
      if (committed) return;
      stall = setTimeout(() => {
        abort();
        settle(
          failedOutcome(
            failure(
              504,
              'TIMEOUT',
              `the provider went silent for ${input.stallMs} ms before any content`,
              true,
            ),
            reader.usage,
            reader.model,
          ),
        );
      }, input.stallMs);
    };
    /** A committed stream that cannot go on: the client gets an error event, never a clean end. */
    const breakOff = (type: string, message: string, errorCode: ErrorCode, text = '') => {
      done = true;
      clearTimeout(stall);
      abort();
      // What came before the failure goes out now; the error event once the attempt is recorded.
      if (text !== '') client.write(text, headers);
      const outcome: AttemptOutcome = {
        kind: 'answered',
        success: false,
        errorCode,
        usage: reader.usage,
        model: reader.model,
      };
      void input
        .record(outcome)
        .catch(() => undefined)
        .then(() => {
          client.end(reader.errorEvent(type, message));
          settle(outcome);
        });
    };
    /** The clean end: the record is written, then the end goes out. */
    const finish = (text: string) => {
      done = true;
      clearTimeout(stall);
      const outcome: AttemptOutcome = {
        kind: 'answered',
        success: true,
        usage: reader.usage,
        model: reader.model,
      };
      input.record(outcome).then(
        () => {
          client.write(text, headers);
          client.end();
          settle(outcome);
        },
        () => {
          // The row could not be written: the answer still goes out (as /call's does), with the warning
          // as an SSE comment, which clients skip.
          client.write(`: switchboard warning: the ledger did not record this answer\n\n${text}`, headers);
          client.end();
          settle(outcome);
        },
      );
    };

    upstream.setEncoding('utf8');
    armStall();
    upstream.on('data', (chunk: string) => {
      if (done) return;
      armStall();
      let out = '';
      let events: SseEvent[];
      try {
        events = splitter.push(chunk);
      } catch {
        const message = `the provider sent a stream event longer than ${MAX_SSE_EVENT_CHARS} characters`;
        if (committed) return breakOff('api_error', `${message}; the answer is incomplete`, 'PROVIDER_ERROR');
        abort();
        return settle(
          failedOutcome(failure(502, 'PROVIDER_ERROR', message, true), reader.usage, reader.model),
        );
      }
      for (const event of events) {
        const kind = reader.read(event);
        if (!committed) {
          if (kind === 'hold' || kind === 'pass') {
            held += event.raw;
          } else if (kind === 'content') {
            committed = true;
            clearTimeout(stall);
            out += held + event.raw;
            held = '';
          } else if (kind === 'final') {
            return finish(held + event.raw);
          } else if (kind === 'error' || kind === 'malformed') {
            abort();
            const error = reader.error;
            const status = error?.status ?? 502;
            return settle(
              failedOutcome(
                failure(
                  status,
                  kind === 'malformed' ? 'PROVIDER_ERROR' : classifyStatus(status).code,
                  kind === 'malformed'
                    ? 'the provider sent a stream event that is not JSON'
                    : `the provider's stream reported ${error?.type ?? 'an error'}: ${error?.message ?? ''}`,
                  true,
                  JSON.stringify(
                    dialect.errorBody(status, error?.message ?? 'the provider failed', error?.type),
                  ),
                ),
                reader.usage,
                reader.model,
              ),
            );
          }
          continue;
        }
        if (kind === 'final') {
          if (out !== '') client.write(out, headers);
          return finish(event.raw);
        }
        if (kind === 'error') {
          const error = reader.error;
          return breakOff(
            error?.type ?? 'api_error',
            error?.message ?? 'the provider failed',
            classifyStatus(error?.status ?? 500).code,
            out,
          );
        }
        if (kind === 'malformed') {
          return breakOff(
            'api_error',
            'the provider sent a malformed stream event; the answer is incomplete',
            'PROVIDER_ERROR',
            out,
          );
        }
        if (kind !== 'drop') out += event.raw;
      }
      if (out !== '') client.write(out, headers);
      // A client that reads slower than the provider sends (or not at all): the provider waits, and
      // the answer is not held in this process's memory.
      if (!done && client.response.writableNeedDrain) {
        upstream.pause();
        client.response.once('drain', () => upstream.resume());
      }
    });
    const cut = () => {
      if (done) return;
      if (client.gone) {
        done = true;
        const outcome = answeredAfterHangUp(reader);
        void input.record(outcome).finally(() => settle(outcome));
        return;
      }
      if (!committed) {
        return settle(
          failedOutcome(
            failure(502, 'PROVIDER_UNAVAILABLE', 'the provider closed the stream before any content', true),
            reader.usage,
            reader.model,
          ),
        );
      }
      breakOff(
        'api_error',
        'the provider closed the stream before the answer was complete',
        'PROVIDER_UNAVAILABLE',
      );
    };
    upstream.once('end', cut);
    upstream.once('aborted', cut);
    upstream.once('error', cut);
    upstream.once('close', cut);
  });
}
