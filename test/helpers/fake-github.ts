import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';

// A small stand-in for GitHub's REST API on loopback: just the endpoints Switchboard calls through
// Octokit (issues, their comments, pull requests), answering as GitHub does (status codes, JSON shapes,
// 422 for a second pull request of the same head), and recording every request so a test can assert
// on what reached "GitHub" and what credentials it carried.

export interface FakeIssue {
  number: number;
  title: string;
  body?: string;
  labels?: string[];
}

export interface FakePullRequest {
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: 'open' | 'closed';
  html_url: string;
}

export interface FakeComment {
  id: number;
  issue: number;
  body: string;
  html_url: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization?: string;
  body?: unknown;
}

export interface FakeGitHub {
  /** The API base URL (`GITHUB_API_URL`). */
  url: string;
  requests: RecordedRequest[];
  pulls: FakePullRequest[];
  comments: FakeComment[];
  close(): Promise<void>;
}

export interface FakeGitHubOptions {
  owner: string;
  repo: string;
  issues: FakeIssue[];
  /** The only token accepted; any other (or none) gets 401. */
  token: string;
  /**
   * Requests answered by doing the work and never replying (a process killed while it waits, as GitHub
   * does the work before the answer arrives).
   */
  stall?: (request: RecordedRequest) => boolean;
  /** Serve over https with this key and certificate (PEM), as GitHub does. */
  tls?: { key: string; cert: string };
  /** Where the REST API lives, as on GitHub Enterprise (`/api/v3`). @default the root */
  apiPrefix?: string;
  /**
   * A folder of bare repositories (`OWNER/REPO.git`) served over git's smart HTTP (`git http-backend`)
   * at `/OWNER/REPO.git`, to a client that sends `Authorization: basic base64(x-access-token:TOKEN)`.
   */
  gitRoot?: string;
}

export async function startFakeGitHub(options: FakeGitHubOptions): Promise<FakeGitHub> {
  const requests: RecordedRequest[] = [];
  const pulls: FakePullRequest[] = [];
  const comments: FakeComment[] = [];
  let nextNumber = Math.max(0, ...options.issues.map((issue) => issue.number)) + 1;
  let nextComment = 1000;
  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    void handle(request, response);
  };
  const server = options.tls === undefined ? createServer(listener) : createTlsServer(options.tls, listener);
  const apiPrefix = options.apiPrefix ?? '';

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (options.gitRoot !== undefined && /^\/[^/]+\/[^/]+\.git\//.test(url.pathname)) {
      gitHttp(options.gitRoot, options.token, request, response, url, requests);
      return;
    }
    if (!url.pathname.startsWith(`${apiPrefix}/`)) {
      response.writeHead(404).end();
      return;
    }
    url.pathname = url.pathname.slice(apiPrefix.length);
    const text = await readBody(request);
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
    };
    if (request.headers.authorization !== undefined) recorded.authorization = request.headers.authorization;
    if (text !== '') recorded.body = JSON.parse(text) as unknown;
    requests.push(recorded);
    const send = (status: number, value: unknown): void => {
      if (options.stall?.(recorded) === true) return;
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify(value));
    };
    const authorization = request.headers.authorization ?? '';
    if (!authorization.endsWith(` ${options.token}`)) {
      send(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
      return;
    }
    const prefix = `/repos/${options.owner}/${options.repo}`;
    if (!url.pathname.startsWith(`${prefix}/`)) {
      send(404, { message: 'Not Found' });
      return;
    }
    const rest = url.pathname.slice(prefix.length);
    const body = recorded.body as Record<string, string> | undefined;
    let match: RegExpExecArray | null;
    if ((match = /^\/issues\/(\d+)$/.exec(rest)) !== null && recorded.method === 'GET') {
      const issue = options.issues.find((entry) => entry.number === Number(match?.[1]));
      if (issue === undefined) return send(404, { message: 'Not Found' });
      return send(200, {
        number: issue.number,
        title: issue.title,
        body: issue.body ?? null,
        state: 'open',
        labels: (issue.labels ?? []).map((name, index) => ({ id: index + 1, name })),
        html_url: `https://github.example/${options.owner}/${options.repo}/issues/${issue.number}`,
      });
    }
    if ((match = /^\/issues\/(\d+)\/comments$/.exec(rest)) !== null) {
      const number = Number(match[1]);
      if (!options.issues.some((issue) => issue.number === number))
        return send(404, { message: 'Not Found' });
      if (recorded.method === 'GET')
        return send(
          200,
          comments.filter((comment) => comment.issue === number),
        );
      const comment: FakeComment = {
        id: nextComment++,
        issue: number,
        body: body?.['body'] ?? '',
        html_url: `https://github.example/${options.owner}/${options.repo}/issues/${number}#issuecomment-${nextComment}`,
      };
      comments.push(comment);
      return send(201, comment);
    }
    if (rest === '/pulls' && recorded.method === 'GET') {
      const head = recorded.query['head']?.split(':').at(-1);
      const state = recorded.query['state'] ?? 'open';
      const found = pulls.filter(
        (pull) => (head === undefined || pull.head === head) && (state === 'all' || pull.state === state),
      );
      return send(200, found.map(pullJson));
    }
    if (rest === '/pulls' && recorded.method === 'POST') {
      const head = body?.['head'];
      const baseBranch = body?.['base'];
      if (head === undefined || baseBranch === undefined || body?.['title'] === undefined)
        return send(422, { message: 'Validation Failed' });
      if (pulls.some((pull) => pull.head === head && pull.state === 'open'))
        return send(422, {
          message: 'Validation Failed',
          errors: [{ message: `A pull request already exists for ${options.owner}:${head}.` }],
        });
      const number = nextNumber++;
      const pull: FakePullRequest = {
        number,
        title: body?.['title'] ?? '',
        body: body?.['body'] ?? '',
        head,
        base: baseBranch,
        state: 'open',
        html_url: `https://github.example/${options.owner}/${options.repo}/pull/${number}`,
      };
      pulls.push(pull);
      return send(201, pullJson(pull));
    }
    send(404, { message: 'Not Found' });
  }

  function pullJson(pull: FakePullRequest): Record<string, unknown> {
    return {
      number: pull.number,
      title: pull.title,
      body: pull.body,
      state: pull.state,
      html_url: pull.html_url,
      head: { ref: pull.head, label: `${options.owner}:${pull.head}` },
      base: { ref: pull.base },
    };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake GitHub has no port');
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${address.port}${apiPrefix}`,
    requests,
    pulls,
    comments,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/**
 * git's smart HTTP through `git http-backend` (CGI), refusing a request without the token: the way a
 * push to an https GitHub remote authenticates. Every request is recorded with its credentials.
 */
function gitHttp(
  root: string,
  token: string,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  requests: RecordedRequest[],
): void {
  const recorded: RecordedRequest = {
    method: request.method ?? 'GET',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
  };
  if (request.headers.authorization !== undefined) recorded.authorization = request.headers.authorization;
  requests.push(recorded);
  const expected = `basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  if (request.headers.authorization?.toLowerCase() !== expected.toLowerCase()) {
    request.resume();
    response.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"' }).end();
    return;
  }
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      REMOTE_USER: 'x-access-token',
      REMOTE_ADDR: '127.0.0.1',
      REQUEST_METHOD: recorded.method,
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      ...(request.headers['content-encoding'] === undefined
        ? {}
        : { HTTP_CONTENT_ENCODING: request.headers['content-encoding'] }),
      ...(request.headers['git-protocol'] === undefined
        ? {}
        : { GIT_PROTOCOL: String(request.headers['git-protocol']) }),
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  request.pipe(child.stdin);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.on('close', () => {
    const output = Buffer.concat(chunks);
    const split = output.indexOf('\r\n\r\n');
    const head = output.subarray(0, split).toString('latin1');
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of head.split('\r\n')) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'status') status = Number.parseInt(value, 10);
      else if (name !== '') headers[name] = value;
    }
    response.writeHead(status, headers).end(output.subarray(split + 4));
  });
}
