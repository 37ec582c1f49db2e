import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { SwitchboardError } from '../../core/errors.js';
import type { McpContext } from '../../mcp/context.js';
import type { AgentRunStore } from '../../agents/run-store.js';
import type { SqlDatabase } from '../../store/sql/sql-database.js';
import type { WorkflowStore } from '../../store/workflow-records.js';
import { methodNotAllowed, sendError, sendJson } from '../http.js';
import type { AgentDetail, EventPage, RunDetail, SessionInfo, WorkflowGraph } from './api-types.js';
import { exchangeCode, holdsUiToken, isPageNavigation, SIGN_IN_PAGE, type UiAccess } from './access.js';
import { runAction, type ActionName } from './actions.js';
import { idFromSegment } from './id-codec.js';
import { launchRun, listWorkflows } from './launch.js';
import { DashboardQueries, workflowSummary, type RunFilter } from './queries.js';
import { SECURITY_HEADERS, UiFiles } from './static.js';
import { StreamHub } from './stream.js';

// The dashboard's routes under /ui: the app's files, its JSON API (/ui/api) and its event stream. What
// admits a request (token, Host, Origin, JSON bodies) is serve's `admit`; this answers admitted ones.

const DAY_MS = 86_400_000;
const MAX_DIFF_CHARS = 200_000;

export interface Dashboard {
  access: UiAccess;
  /** Whether the request may see the UI: the cookie, a bearer token, or `?code=` on a page's GET. */
  admits(request: IncomingMessage, url: URL): boolean;
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
  /** The 401 of a request without the token (a page to a browser's navigation, else JSON). */
  unauthorized(request: IncomingMessage, response: ServerResponse): void;
  /** Ends the live streams (the server is stopping). */
  stopStreams(): void;
  close(): Promise<void>;
}

export interface DashboardOptions {
  access: UiAccess;
  context: McpContext;
  version: string;
}

export async function openDashboard({ access, context, version }: DashboardOptions): Promise<Dashboard> {
  const [{ openDatabase }, { WorkflowStore }, { AgentRunStore }] = await Promise.all([
    import('../../store/database.js'),
    import('../../store/workflow-records.js'),
    import('../../agents/run-store.js'),
  ]);
  const stateDir = context.config.stateDir;
  const database = await openDatabase({ stateDir });
  const workflows = await WorkflowStore.open({ stateDir });
  const agents = await AgentRunStore.open(stateDir);
  const queries = new DashboardQueries(database);
  const streams = new StreamHub({ queries, workflows });
  const files = new UiFiles();
  const api = new DashboardApi({ database, workflows, agents, queries, streams, context, version });
  return {
    access,
    admits: (request, url) =>
      holdsUiToken(request, access) ||
      (request.method === 'GET' && !url.pathname.startsWith('/ui/api/') && url.searchParams.has('code')),
    async handle(request, response, url) {
      if (exchangeCode(request, response, url, access)) return;
      if (!holdsUiToken(request, access)) return unauthorized(request, response);
      if (url.pathname === '/ui/api' || url.pathname.startsWith('/ui/api/'))
        return api.handle(request, response, url);
      return files.send(response, url.pathname, request.method ?? 'GET');
    },
    unauthorized,
    stopStreams: () => streams.closeAll(),
    async close() {
      streams.closeAll();
      await agents.close();
      await workflows.close();
      await database.close();
    },
  };
}

/**
 * 401 without the cookie or a bearer token: what to open instead. A browser navigating to a page gets
 * a page saying how to sign in again; the API and scripts get the JSON error.
 */
function unauthorized(request: IncomingMessage, response: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
  response.setHeader('cache-control', 'no-store');
  if (isPageNavigation(request, new URL(request.url ?? '/', 'http://localhost'))) {
    response.writeHead(401, { 'content-type': 'text/html; charset=utf-8' });
    response.end(request.method === 'HEAD' ? undefined : SIGN_IN_PAGE);
    return;
  }
  sendError(
    response,
    401,
    new SwitchboardError('AUTH', 'the dashboard needs its token', {
      hint: 'open the URL that `switchboard ui` (or `serve --ui`) printed; it signs this browser in once',
    }),
  );
}

interface ApiParts {
  database: SqlDatabase;
  workflows: WorkflowStore;
  agents: AgentRunStore;
  queries: DashboardQueries;
  streams: StreamHub;
  context: McpContext;
  version: string;
}

class DashboardApi {
  private readonly parts: ApiParts;

  constructor(parts: ApiParts) {
    this.parts = parts;
  }

  async handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    response.setHeader('cache-control', 'no-store');
    const method = request.method ?? 'GET';
    const path = url.pathname.slice('/ui/api'.length);
    const action = /^\/runs\/([^/]+)\/(gate|guide|cancel|resume)$/.exec(path);
    if (action !== null) {
      if (method !== 'POST') return methodNotAllowed(response, 'POST');
      const runId = decodedId(action[1] as string);
      // The run's whole id: a prefix, as the CLI takes, could act on a run the page did not show.
      if ((await this.parts.queries.workflowRow(runId)) === undefined) {
        return sendError(
          response,
          404,
          new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId}`, {
            hint: 'list runs at /ui/',
          }),
        );
      }
      const { status, body } = await runAction(action[2] as ActionName, runId, request, this.parts.context);
      return sendJson(response, status, body);
    }
    if (path === '/runs' && method === 'POST') {
      const { status, body } = await launchRun(request, this.parts.context);
      return sendJson(response, status, body);
    }
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET');
    if (path === '/stream') return this.parts.streams.handle(request, response, url);
    const download = /^\/runs\/([^/]+)\/events\.jsonl$/.exec(path);
    if (download !== null) return this.download(decodedId(download[1] as string), response);
    const body = await this.read(path, url);
    if (body === undefined) {
      return sendError(
        response,
        404,
        new SwitchboardError('RUN_NOT_FOUND', `nothing at ${url.pathname}`, { hint: 'list runs at /ui/' }),
      );
    }
    sendJson(response, 200, body);
  }

  private async read(path: string, url: URL): Promise<unknown> {
    const { queries } = this.parts;
    const query = url.searchParams;
    if (path === '/session') return this.session();
    if (path === '/runs') return queries.listRuns(runFilter(query));
    if (path === '/workflows') return listWorkflows(this.parts.context);
    if (path === '/costs') {
      const { since, until } = range(query);
      return queries.costs(since, until, this.parts.context.config.call.budgetRules);
    }
    if (path === '/routing') {
      const { since, until } = range(query);
      return queries.routing(since, until, this.parts.context.config.route.confidenceThreshold);
    }
    const match = /^\/(runs|agents|calls)\/([^/]+)(\/events)?$/.exec(path);
    if (match === null) return undefined;
    const id = decodedId(match[2] as string);
    if (match[1] === 'runs' && match[3] !== undefined) return this.events(id, query);
    if (match[3] !== undefined) return undefined;
    if (match[1] === 'runs') return this.run(id);
    if (match[1] === 'agents') return this.agent(id);
    return queries.callDetail(id);
  }

  private session(): SessionInfo {
    const { database, version } = this.parts;
    return {
      version,
      database: database.dialect,
      location: database.location,
      host: hostname(),
      actions: true,
    };
  }

  private async run(id: string): Promise<RunDetail | undefined> {
    const { queries, workflows } = this.parts;
    const row = await queries.workflowRow(id);
    if (row === undefined) return undefined;
    const { runView } = await import('../../workflows/engine-view.js');
    const runRow = await workflows.getRun(id);
    if (runRow === undefined) return undefined;
    const [run, children, start, lastSeq] = await Promise.all([
      runView(workflows, runRow),
      queries.childRuns(id),
      queries.runStart(id),
      workflows.lastEventSeq(id),
    ]);
    const detail: RunDetail = { summary: workflowSummary(row), run, children, lastSeq };
    const graph = start?.graph;
    if (graph !== undefined) detail.graph = graph as WorkflowGraph;
    const file = start?.workflowFile as { text?: unknown } | undefined;
    if (typeof file?.text === 'string') detail.source = file.text;
    const budget = runRow.limits.budgetUsd ?? (start?.budgetUsd as number | undefined);
    if (typeof budget === 'number') detail.budgetUsd = budget;
    return detail;
  }

  /** Every event of a run as JSON lines (what the events API pages through), as a file to save. */
  private async download(id: string, response: ServerResponse): Promise<void> {
    if ((await this.parts.queries.workflowRow(id)) === undefined) {
      return sendError(
        response,
        404,
        new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${id}`, {
          hint: 'list runs at /ui/',
        }),
      );
    }
    const file = `${id.replace(/[^\w.-]+/g, '_')}.events.jsonl`;
    response.writeHead(200, {
      'content-type': 'application/x-ndjson; charset=utf-8',
      'content-disposition': `attachment; filename="${file}"`,
    });
    const PAGE = 5_000;
    let after = 0;
    for (;;) {
      const events = await this.parts.workflows.events(id, after, PAGE);
      if (events.length === 0) break;
      const lines = events.map((event) => JSON.stringify({ ...event, at: new Date(event.at).toISOString() }));
      response.write(`${lines.join('\n')}\n`);
      after = events.at(-1)?.seq ?? after;
      if (events.length < PAGE) break;
    }
    response.end();
  }

  private async events(id: string, query: URLSearchParams): Promise<EventPage | undefined> {
    const { queries } = this.parts;
    if ((await queries.workflowRow(id)) === undefined) return undefined;
    const after = count(query.get('after'), 0, Number.MAX_SAFE_INTEGER, 'after') ?? 0;
    const limit = count(query.get('limit'), 1, 5_000, 'limit') ?? 1_000;
    const events = await this.parts.workflows.events(id, after, limit + 1);
    const page = events.slice(0, limit).map((event) => ({ ...event, at: new Date(event.at).toISOString() }));
    return { events: page, lastSeq: page.at(-1)?.seq ?? after, more: events.length > limit };
  }

  private async agent(id: string): Promise<AgentDetail | undefined> {
    const { agents, queries } = this.parts;
    const [record, row] = await Promise.all([agents.get(id), queries.agentRow(id)]);
    if (record === undefined || row === undefined) return undefined;
    const { agentSummary } = await import('./queries.js');
    const events = await agents.events(id);
    const detail: AgentDetail = {
      summary: agentSummary(row),
      taskId: record.taskId,
      title: record.title,
      prompt: [record.task.description, ...record.task.acceptance.map((line) => `- ${line}`)].join('\n'),
      repo: record.repo,
      baseBranch: record.baseBranch,
      branch: record.branch,
      phase: record.phase,
      attempt: record.attempt,
      merge: record.options.merge,
      events: events.map(({ runId: _runId, ...event }) => event),
    };
    if (record.commitSha !== undefined) detail.commit = record.commitSha;
    if (record.mergedCommit !== undefined) detail.mergedCommit = record.mergedCommit;
    if (record.errorCode !== undefined) detail.errorCode = record.errorCode;
    if (record.error !== undefined) detail.error = record.error;
    if (record.detail !== undefined) detail.detail = record.detail;
    const pr = events.findLast(
      (event) => event.kind === 'pull-request' || /pull request/i.test(event.message),
    );
    const prData = (pr?.data ?? {}) as { number?: unknown; url?: unknown };
    if (pr !== undefined && (typeof prData.url === 'string' || typeof prData.number === 'number')) {
      detail.pullRequest = {
        ...(typeof prData.number === 'number' ? { number: prData.number } : {}),
        ...(typeof prData.url === 'string' && /^https?:\/\//.test(prData.url) ? { url: prData.url } : {}),
      };
    }
    // A run recorded on another machine names a folder of that machine.
    const here = record.runnerHost === undefined || record.runnerHost === hostname();
    const diff = here
      ? await agentDiff(record.repo, record.baseCommit, record.mergedCommit ?? record.commitSha)
      : undefined;
    if (diff !== undefined) {
      detail.diff = diff.slice(0, MAX_DIFF_CHARS);
      if (diff.length > MAX_DIFF_CHARS) detail.diffTruncated = true;
    }
    return detail;
  }
}

/**
 * `git diff base commit` in the run's repository, or `undefined` when it cannot be had. The folder comes
 * from the ledger, so its git config is not trusted: no external diff or textconv command, no
 * fsmonitor, and no transport at all (a partial clone's lazy fetch would run the `core.sshCommand` or
 * upload-pack its config names): a missing object makes the diff fail instead.
 */
async function agentDiff(
  repo: string,
  base: string,
  commit: string | undefined,
): Promise<string | undefined> {
  const sha = /^[0-9a-f]{7,64}$/;
  if (commit === undefined || !sha.test(base) || !sha.test(commit)) return undefined;
  const { git } = await import('../../agents/git.js');
  const args = ['-c', 'core.fsmonitor=false', '-c', 'protocol.allow=never', 'diff'];
  args.push('--no-ext-diff', '--no-textconv', '--no-color', base, commit, '--');
  const result = await git(repo, args, { GIT_NO_LAZY_FETCH: '1' }).catch(() => undefined);
  return result?.exitCode === 0 ? result.stdout : undefined;
}

/** A run id from the path; a malformed escape is the caller's mistake, not the server's. */
function decodedId(segment: string): string {
  const id = idFromSegment(segment);
  if (id === undefined) {
    throw new SwitchboardError('INVALID_INPUT', 'the run id in the path is not valid percent-encoding');
  }
  return id;
}

function count(text: string | null, min: number, max: number, name: string): number | undefined {
  if (text === null || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new SwitchboardError('INVALID_INPUT', `"${name}" must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/** An ISO time or epoch milliseconds. */
function time(text: string | null, name: string): number | undefined {
  if (text === null || text === '') return undefined;
  const value = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  // Beyond ±8.64e15 ms a Date is invalid.
  if (!Number.isFinite(value) || Math.abs(value) > 8.64e15) {
    throw new SwitchboardError('INVALID_INPUT', `"${name}" is not a time`, {
      hint: 'give an ISO time (2026-11-27T10:00:00Z) or epoch milliseconds',
    });
  }
  return value;
}

function range(query: URLSearchParams): { since: number; until: number } {
  const until = time(query.get('until'), 'until') ?? Date.now() + 60_000;
  return { since: time(query.get('since'), 'since') ?? until - 30 * DAY_MS, until };
}

const KINDS = new Set(['workflow', 'agent', 'call']);

export function runFilter(query: URLSearchParams): RunFilter {
  const filter: RunFilter = { limit: count(query.get('limit'), 1, 200, 'limit') ?? 50 };
  const kind = query.get('kind');
  if (kind !== null && kind !== '') {
    if (!KINDS.has(kind)) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        `"kind" must be workflow, agent or call, not ${JSON.stringify(kind.slice(0, 40))}`,
      );
    }
    filter.kind = kind as RunFilter['kind'] & string;
  }
  for (const name of ['status', 'name', 'host'] as const) {
    const value = query.get(name);
    if (value !== null && value !== '') filter[name] = value.slice(0, 200);
  }
  const tag = query.get('tag');
  if (tag !== null && tag !== '') {
    const at = tag.indexOf('=');
    if (at <= 0) throw new SwitchboardError('INVALID_INPUT', '"tag" must be key=value');
    filter.tag = { key: tag.slice(0, at), value: tag.slice(at + 1) };
  }
  const since = time(query.get('since'), 'since');
  const until = time(query.get('until'), 'until');
  if (since !== undefined) filter.since = since;
  if (until !== undefined) filter.until = until;
  const cursor = query.get('cursor');
  if (cursor !== null && cursor !== '') {
    const match = /^(\d+)\.(.+)$/.exec(cursor);
    if (match === null) throw new SwitchboardError('INVALID_INPUT', '"cursor" is not one this server gave');
    filter.before = { at: Number(match[1]), id: match[2] as string };
  }
  return filter;
}
