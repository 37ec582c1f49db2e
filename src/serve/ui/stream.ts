import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchboardError } from '../../core/errors.js';
import type { WorkflowStore } from '../../store/workflow-records.js';
import { redactedJson, sendError } from '../http.js';
import type { RunSummary, StreamEventName } from './api-types.js';
import { agentSummary, workflowSummary, type DashboardQueries } from './queries.js';
import { SECURITY_HEADERS } from './static.js';

// Live updates as Server-Sent Events, read from the ledger's rows: whichever process or machine wrote
// an event, the page sees it at the next poll. Each stream polls on its own timer, one query after the
// other finished; the number of streams is capped, so pages cannot multiply the database's load.
// A stream writes at its reader's pace: each write that fills the socket's buffer waits for it to
// drain before the next row is read, so a slow reader costs a buffer's worth of memory, not a run's.

/** How often a stream looks for new rows (ms): a step's end reaches an open page within this. */
export const STREAM_POLL_MS = 250;
/** Streams one server keeps open at once; more get 503 and EventSource retries. */
export const MAX_STREAMS = 64;
const PING_MS = 15_000;
/**
 * How long a write may wait for the reader to take what is buffered (ms) before the stream is cut: a
 * reader that stopped reading (a frozen tab, a stuck proxy) frees its slot. Its EventSource reconnects
 * and continues from the last id it read.
 */
export const STALL_MS = 10_000;
/** Rows read from the ledger at a time: a long run is streamed in batches, never loaded whole. */
const BATCH_ROWS = 200;
/** Rows of the run list changed within this much before the last poll are looked at again (clock skew). */
const SKEW_MS = 5_000;

export interface StreamSources {
  queries: DashboardQueries;
  workflows: WorkflowStore;
  pollMs?: number;
  /** @default STALL_MS */
  stallMs?: number;
}

/** Writes one event; resolves false when the stream has ended (the poll stops there). */
type Send = (event: StreamEventName, data: unknown, id?: number) => Promise<boolean>;
type Poll = (send: Send) => Promise<void>;

export class StreamHub {
  private readonly open = new Set<ServerResponse>();

  private readonly sources: StreamSources;

  constructor(sources: StreamSources) {
    this.sources = sources;
  }

  get size(): number {
    return this.open.size;
  }

  async handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    if (this.open.size >= MAX_STREAMS) {
      response.setHeader('retry-after', '5');
      return sendError(
        response,
        503,
        new SwitchboardError('INVALID_INPUT', `this server has ${MAX_STREAMS} live pages open already`, {
          hint: 'close some dashboard tabs',
        }),
      );
    }
    // The slot is taken before the first await: streams opened at once cannot all pass the check.
    this.open.add(response);
    let poll: Poll | undefined;
    try {
      poll = await this.pollFor(request, response, url);
    } finally {
      if (poll === undefined) this.open.delete(response);
    }
    if (poll === undefined) return;
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    const writer = new EventWriter(response, this.sources.stallMs ?? STALL_MS);
    void writer.write('retry: 2000\n\n');
    let closed = false;
    let timer: NodeJS.Timeout | undefined;
    // A ping only when nothing is waiting: it keeps proxies from timing out an idle stream.
    const ping = setInterval(() => {
      if (!response.writableNeedDrain) void writer.write(': ping\n\n');
    }, PING_MS);
    const stop = () => {
      closed = true;
      clearTimeout(timer);
      clearInterval(ping);
      this.open.delete(response);
    };
    response.once('close', stop);
    const send: Send = (event, data, id) => {
      const idLine = id === undefined ? '' : `id: ${id}\n`;
      return writer.write(`${idLine}event: ${event}\ndata: ${redactedJson(data)}\n\n`);
    };
    const tick = async () => {
      try {
        await poll(send);
      } catch {
        // A failed read (a locked or restarting database) is retried at the next tick.
      }
      if (!closed) timer = setTimeout(() => void tick(), this.sources.pollMs ?? STREAM_POLL_MS);
    };
    await tick();
  }

  /** Ends every stream (the server is stopping); the pages' EventSource reconnects to the next one. */
  closeAll(): void {
    for (const response of this.open) response.end();
    this.open.clear();
  }

  /** What the stream watches: a workflow run's events, an agent run's, or the list of runs. */
  private async pollFor(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
  ): Promise<Poll | undefined> {
    const runId = url.searchParams.get('run');
    const agentId = url.searchParams.get('agent');
    // EventSource sends the last `id:` it saw when it reconnects.
    const lastId = Number(request.headers['last-event-id'] ?? Number.NaN);
    const after = Number.isSafeInteger(lastId) ? lastId : wholeNumber(url.searchParams.get('after'));
    const { queries, workflows } = this.sources;
    if (runId !== null) {
      let row = await queries.workflowRow(runId);
      if (row === undefined) return notFound(response, `there is no workflow run ${runId}`);
      let seq = after;
      let updatedAt = row.updated_at;
      return async (send) => {
        for (;;) {
          const events = await workflows.events(runId, seq, BATCH_ROWS);
          for (const event of events) {
            const at = new Date(event.at).toISOString();
            if (!(await send('workflow-event', { ...event, at }, event.seq))) return;
            seq = event.seq;
          }
          if (events.length < BATCH_ROWS) break;
        }
        row = await queries.workflowRow(runId);
        if (row !== undefined && row.updated_at !== updatedAt) {
          updatedAt = row.updated_at;
          await send('run', workflowSummary(row));
        }
      };
    }
    if (agentId !== null) {
      let row = await queries.agentRow(agentId);
      if (row === undefined) return notFound(response, `there is no agent run ${agentId}`);
      let seen = after;
      let updatedAt = row.updated_at;
      return async (send) => {
        for (;;) {
          const events = await queries.agentEvents(agentId, seen, BATCH_ROWS);
          for (const event of events) {
            const data = {
              at: new Date(event.at).toISOString(),
              phase: event.phase,
              kind: event.kind,
              message: event.message,
              ...(event.data === null ? {} : { data: safeParse(event.data) }),
            };
            if (!(await send('agent-event', data, seen + 1))) return;
            seen += 1;
          }
          if (events.length < BATCH_ROWS) break;
        }
        row = await queries.agentRow(agentId);
        if (row !== undefined && row.updated_at !== updatedAt) {
          updatedAt = row.updated_at;
          await send('run', agentSummary(row));
        }
      };
    }
    // The list: rows changed since the last look, each sent once per change.
    let since = Date.now() - SKEW_MS;
    const sent = new Map<string, number>();
    return async (send) => {
      const { runs, updatedAt } = await queries.changedRuns(since - SKEW_MS);
      const changed: RunSummary[] = runs.filter((run) => sent.get(run.id) !== updatedAt.get(run.id));
      for (const run of changed) sent.set(run.id, updatedAt.get(run.id) ?? 0);
      if (changed.length > 0) await send('runs', changed);
      since = Math.max(since, ...updatedAt.values());
      for (const [id, at] of sent) if (at < since - 2 * SKEW_MS) sent.delete(id);
    };
  }
}

/**
 * One stream's writes. Each waits, when the socket's buffer is full, for the reader to drain it; a
 * reader that takes nothing for `stallMs` is cut off. Write errors (a reset connection) end the
 * stream instead of reaching the process.
 */
class EventWriter {
  private readonly response: ServerResponse;

  private readonly stallMs: number;

  constructor(response: ServerResponse, stallMs: number) {
    this.response = response;
    this.stallMs = stallMs;
    response.on('error', () => response.destroy());
  }

  /** Resolves true once `text` is on its way, false when the stream has ended instead. */
  async write(text: string): Promise<boolean> {
    const { response } = this;
    if (response.writableEnded || response.destroyed) return false;
    if (response.write(text)) return true;
    return this.drained();
  }

  private drained(): Promise<boolean> {
    const { response } = this;
    return new Promise((resolve) => {
      const finish = (taken: boolean) => {
        clearTimeout(timer);
        response.off('drain', onDrain);
        response.off('close', onClose);
        resolve(taken);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      const timer = setTimeout(() => {
        finish(false);
        // Not end(): it would wait to flush what the reader does not read.
        response.destroy();
      }, this.stallMs);
      response.on('drain', onDrain);
      response.on('close', onClose);
    });
  }
}

function wholeNumber(text: string | null): number {
  const value = Number(text ?? 0);
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function notFound(response: ServerResponse, message: string): undefined {
  sendError(response, 404, new SwitchboardError('RUN_NOT_FOUND', message, { hint: 'list runs at /ui/' }));
  return undefined;
}
