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

/** How often a stream looks for new rows (ms): a step's end reaches an open page within this. */
export const STREAM_POLL_MS = 250;
/** Streams one server keeps open at once; more get 503 and EventSource retries. */
export const MAX_STREAMS = 64;
const PING_MS = 15_000;
/** Bytes a stream may have waiting for a slow reader before it is ended. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/** Rows of the run list changed within this much before the last poll are looked at again (clock skew). */
const SKEW_MS = 5_000;

export interface StreamSources {
  queries: DashboardQueries;
  workflows: WorkflowStore;
  pollMs?: number;
}

type Poll = (send: (event: StreamEventName, data: unknown, id?: number) => void) => Promise<void>;

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
    response.write('retry: 2000\n\n');
    let closed = false;
    let timer: NodeJS.Timeout | undefined;
    const ping = setInterval(() => response.write(': ping\n\n'), PING_MS);
    const stop = () => {
      closed = true;
      clearTimeout(timer);
      clearInterval(ping);
      this.open.delete(response);
    };
    response.once('close', stop);
    const send = (event: StreamEventName, data: unknown, id?: number) => {
      const idLine = id === undefined ? '' : `id: ${id}\n`;
      response.write(`${idLine}event: ${event}\ndata: ${redactedJson(data)}\n\n`);
      // A reader that does not keep up is let go rather than buffered for: its EventSource reconnects
      // and continues from the last id it read.
      if (response.writableLength > MAX_BUFFERED_BYTES) response.end();
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
        for (const event of await workflows.events(runId, seq)) {
          seq = event.seq;
          send('workflow-event', { ...event, at: new Date(event.at).toISOString() }, event.seq);
        }
        row = await queries.workflowRow(runId);
        if (row !== undefined && row.updated_at !== updatedAt) {
          updatedAt = row.updated_at;
          send('run', workflowSummary(row));
        }
      };
    }
    if (agentId !== null) {
      let row = await queries.agentRow(agentId);
      if (row === undefined) return notFound(response, `there is no agent run ${agentId}`);
      let seen = after;
      let updatedAt = row.updated_at;
      return async (send) => {
        for (const event of await queries.agentEvents(agentId, seen, 500)) {
          seen += 1;
          send(
            'agent-event',
            {
              at: new Date(event.at).toISOString(),
              phase: event.phase,
              kind: event.kind,
              message: event.message,
              ...(event.data === null ? {} : { data: safeParse(event.data) }),
            },
            seen,
          );
        }
        row = await queries.agentRow(agentId);
        if (row !== undefined && row.updated_at !== updatedAt) {
          updatedAt = row.updated_at;
          send('run', agentSummary(row));
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
      if (changed.length > 0) send('runs', changed);
      since = Math.max(since, ...updatedAt.values());
      for (const [id, at] of sent) if (at < since - 2 * SKEW_MS) sent.delete(id);
    };
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
