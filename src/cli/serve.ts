import { flushTracing } from '../observe/tracing.js';
import { LISTENER_OPTIONS } from '../core/http-listener.js';
import { readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { RouteMetrics } from '../observe/prometheus.js';
import type { McpContext } from '../mcp/context.js';
import type { Router } from '../route/router.js';
import type { Ledger } from '../store/ledger.js';
import type { CommandPolicy } from '../mcp/command-policy.js';
import { authorize, callerOf, checkListenAddress, serverToken, serverTokenOrNew } from '../serve/auth.js';
import type { CallService } from '../serve/call-handler.js';
import { removeTokenFiles, writeTokenFiles } from '../confinement/server-tokens.js';
import {
  absorbConnectionErrors,
  methodNotAllowed,
  sendError,
  sendJson,
  statusFor,
  toSwitchboardError,
} from '../serve/http.js';
import type { Dashboard } from '../serve/ui/handler.js';
import type { Gateway } from '../serve/gateway/gateway.js';
import { checkRequest, corsFor, type GuardSettings } from '../serve/request-guard.js';
import { routeRequest } from '../serve/route-handler.js';
import { parseSeconds } from './parse-seconds.js';
import { backgroundLockFile, SETTINGS_VARIABLE } from './background-serve.js';
import {
  addRoutingFlags,
  resolveConfig,
  routerOptions,
  warn,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface ServeFlags extends RoutingFlags {
  host: string;
  port: number;
  metrics?: boolean;
  pool: number;
  poolModel: string;
  maxTimeout: number;
  grace: number;
  allowOrigin: string[];
  allowCommands?: boolean;
  repoRoot: string[];
  requireToken?: boolean;
  ui?: boolean;
  idleExit?: number;
}

/** `switchboard ui`'s flags: a loopback server with the dashboard and nothing else. */
interface UiFlags {
  port: number;
  allowCommands?: boolean;
  repoRoot: string[];
}

/** How a server started: serve's endpoints, and the dashboard when asked for (`ui`: only it). */
interface ServerMode {
  ui: boolean;
  uiOnly: boolean;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0 picks a free port)');
  }
  return port;
}

export function parsePoolSize(value: string): number {
  const size = Number(value);
  if (!/^\d+$/.test(value.trim()) || size > 32)
    throw new InvalidArgumentError('expected a whole number from 0 to 32');
  return size;
}

export function registerServeCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('serve')
      .description(
        'route and call over HTTP: POST /route, POST /call, the gateway under /v1 (the Anthropic and OpenAI wire protocols), MCP tools at /mcp, GET /healthz, and GET /metrics with --metrics',
      )
      .option(
        '--host <host>',
        'address to listen on; beyond loopback needs SWITCHBOARD_SERVER_TOKEN',
        '127.0.0.1',
      )
      .option('--port <port>', 'port to listen on (0 picks a free port)', parsePort, 8787)
      .option('--metrics', 'serve Prometheus metrics at GET /metrics')
      .option('--pool <n>', 'Claude Code processes kept warm for POST /call (0: none)', parsePoolSize, 2)
      .option(
        '--pool-model <model>',
        'the model of the warm processes (claude:<model> calls use them)',
        'haiku',
      )
      .option(
        '--max-timeout <seconds>',
        'the longest one call may run; a longer timeoutMs is cut to it',
        parseSeconds,
        600,
      )
      .option(
        '--grace <seconds>',
        'on SIGTERM, how long calls in flight may finish before they are aborted',
        parseSeconds,
        30,
      )
      .option(
        '--allow-origin <origin>',
        'let web pages of this origin (https://app.example) call the server; repeatable',
        collect,
        [],
      )
      .option(
        '--allow-commands',
        'let /mcp callers run agent_run and workflows with scripts or agents, in --repo-root folders only',
      )
      .option('--repo-root <dir>', 'a folder --allow-commands may work in; repeatable', collect, [])
      // Kept so scripts that pass it still start: every caller needs the token now, loopback included.
      .option('--require-token', 'no effect: every caller needs the token now (kept for old scripts)')
      .option('--ui', 'serve the dashboard at /ui/; its URL, with a token, is printed at start')
      .option(
        '--idle-exit <seconds>',
        'stop (as on SIGTERM) after this long without a request',
        parseSeconds,
      ),
  ).action(async (flags: ServeFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalFlags>();
    await runServer(resolveConfig(globals, flags), flags, { ui: flags.ui === true, uiOnly: false });
  });
}

export function registerUiCommand(program: Command): void {
  program
    .command('ui')
    .description(
      'the dashboard on this machine only: prints its URL (with a token) and serves it until Ctrl-C',
    )
    .option('--port <port>', 'port to listen on (0 picks a free port)', parsePort, 8789)
    .option(
      '--allow-commands',
      'let the dashboard go on with runs whose steps run commands or agents, in --repo-root folders only',
    )
    .option('--repo-root <dir>', 'a folder --allow-commands may work in; repeatable', collect, [])
    .action(async (flags: UiFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalFlags>();
      const serveFlags: ServeFlags = {
        ...flags,
        host: '127.0.0.1',
        pool: 0,
        poolModel: 'haiku',
        maxTimeout: 600,
        grace: 5,
        allowOrigin: [],
      };
      await runServer(resolveConfig(globals, serveFlags), serveFlags, { ui: true, uiOnly: true });
    });
}

async function runServer(config: SwitchboardConfig, flags: ServeFlags, mode: ServerMode): Promise<void> {
  // Beyond loopback only a token the user chose will do: a remote caller cannot read the token file.
  checkListenAddress(flags.host, serverToken());
  const token = serverTokenOrNew();
  const access = await accessSettings(config, flags);
  // A server lives long and commits on every request: its ledger's WAL checkpoints go to a worker.
  (await import('../store/database.js')).checkpointSqliteInBackground();
  const services = await startServices(config, flags, !mode.uiOnly);
  let dashboard: Dashboard | undefined;
  let retention: NodeJS.Timeout | undefined;
  let tokenFiles: string[] = [];
  let closeGateway: (() => Promise<void>) | undefined;
  let idle: { cancel(): void } | undefined;
  // Started by a client (cli/background-serve.ts): its settings' fingerprint goes in the token file.
  const background = process.env[SETTINGS_VARIABLE];
  delete process.env[SETTINGS_VARIABLE];
  try {
    const { createServer } = await import('node:http');
    const inFlight = new AbortController();
    const mcp = await mcpContext(config, services, inFlight.signal, access.commands);
    if (mode.ui) dashboard = await startDashboard(mcp, token);
    const started = mode.uiOnly ? undefined : await startGateway(config, services, token, access.guard);
    closeGateway = started?.close;
    const gateway = started?.gateway;
    const context: HandlerContext = {
      ...services,
      mcp,
      abortSignal: inFlight.signal,
      dashboard,
      gateway,
      mode,
    };
    // Responses not yet sent. Once stopping, each says `Connection: close`, so a keep-alive client
    // does not hold the server open after its last answer.
    const unanswered = new Set<ServerResponse>();
    let stopping = false;
    let lastRequestAt = Date.now();
    const server = createServer(LISTENER_OPTIONS, (request, response) => {
      if (stopping) response.setHeader('connection', 'close');
      unanswered.add(response);
      lastRequestAt = Date.now();
      response.once('close', () => {
        unanswered.delete(response);
        lastRequestAt = Date.now();
      });
      if (!admit(request, response, token, access, dashboard, gateway !== undefined)) return;
      handle(request, response, context).catch((error: unknown) => {
        const failure = toSwitchboardError(error);
        if (failure.code === 'INTERNAL') warn(`serve: ${failure.message}`);
        if (!response.headersSent) sendError(response, statusFor(failure.code), failure);
        else response.destroy();
      });
    });
    absorbConnectionErrors(server);
    const onStop = () => {
      stopping = true;
      dashboard?.stopStreams();
      for (const response of unanswered) if (!response.headersSent) response.setHeader('connection', 'close');
    };
    await listen(server, flags.host, flags.port);
    // Listening for SIGTERM before saying so: a supervisor that stops the server as soon as it reads
    // the line must still get a clean stop (and the token files removed), not Node's default death.
    const { stopped, stop } = untilSignal(server, inFlight, onStop, flags.grace * 1000);
    const base = serverUrl(server);
    tokenFiles = await publishToken(config, server, base, token, background);
    // The clients racing to start this server wait on the lock no longer: they find the token file.
    if (background !== undefined) rmSync(backgroundLockFile(config.stateDir), { force: true });
    if (flags.idleExit !== undefined)
      idle = stopWhenIdle(flags.idleExit * 1000, {
        lastRequestAt: () => lastRequestAt,
        busy: () => unanswered.size > 0 || mcp.runs.size > 0,
        stop,
      });
    if (dashboard !== undefined) await printSignInLinks(dashboard, browserBase(server), server);
    process.stdout.write(`switchboard: listening on ${base}\n`);
    if (flags.pool > 0) services.calls.warm();
    retention = keepWithin(config);
    await stopped;
    await finishMcpRuns(mcp, inFlight, flags.grace * 1000);
  } finally {
    // First: a client must not find the token of a server that no longer answers.
    removeTokenFiles(tokenFiles, token);
    clearInterval(retention);
    idle?.cancel();
    await closeGateway?.();
    await dashboard?.close();
    await services.router?.close();
    await services.calls.close();
  }
  // Its last spans go out (within their own bound) before the exit below can cut them off.
  await flushTracing();
  // Open sockets of the LLM providers' clients must not keep a stopped server's process alive.
  setTimeout(() => process.exit(), 2_000).unref();
}

/**
 * Prints the dashboard's URL with a one-time sign-in code; when a used link is opened (a second
 * browser, a lost cookie) and no unused one is out, a new one. A page cannot make it replace a link
 * the user has not opened yet.
 */
async function printSignInLinks(dashboard: Dashboard, base: string, server: Server): Promise<void> {
  const { newSignInCode, uiUrl } = await import('../serve/ui/access.js');
  const { access } = dashboard;
  access.port = (server.address() as AddressInfo).port;
  const print = () =>
    process.stdout.write(`switchboard: dashboard at ${uiUrl(base, newSignInCode(access))}\n`);
  access.onCodeRefused = () => {
    if (access.code === undefined) print();
  };
  print();
}

/** How often a running serve prunes route decisions past `ledger.retention`. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * With `ledger.retention`, prunes the ledger's route decisions past it now and every hour, in a ledger
 * of its own; a failure is a warning, never the server's end.
 */
function keepWithin(config: SwitchboardConfig): NodeJS.Timeout | undefined {
  const keepMs = config.ledger.retentionMs;
  if (keepMs === undefined || !config.ledger.enabled) return undefined;
  const prune = async () => {
    const { openLedger } = await import('../store/ledger.js');
    const ledger = openLedger({ stateDir: config.stateDir });
    try {
      await ledger.pruneRouteDecisions(Date.now() - keepMs);
    } finally {
      await ledger.close();
    }
  };
  const run = () => {
    prune().catch((error: unknown) => warn(`serve: ${toSwitchboardError(error).message}`));
  };
  run();
  const timer = setInterval(run, PRUNE_EVERY_MS);
  timer.unref();
  return timer;
}

/** Writes the token files local clients read (see `serve/token-file.ts`); the files to remove at exit. */
async function publishToken(
  config: SwitchboardConfig,
  server: Server,
  url: string,
  token: string,
  settings: string | undefined,
): Promise<string[]> {
  const { port } = server.address() as AddressInfo;
  try {
    const { files, warnings } = await writeTokenFiles(
      {
        url,
        token,
        pid: process.pid,
        stateDir: config.stateDir,
        ...(settings === undefined ? {} : { settings }),
      },
      port,
    );
    for (const warning of warnings) warn(`serve: ${warning}`);
    return files;
  } catch (error) {
    server.close();
    throw new SwitchboardError(
      'STORE_ERROR',
      `cannot write the server's token file in ${config.stateDir}: ${(error as Error).message}`,
      {
        hint: 'make the state folder writable, or pass another --state-dir',
        cause: error,
      },
    );
  }
}

async function startDashboard(mcp: McpContext, serverToken: string): Promise<Dashboard> {
  const [{ openDashboard }, { newUiToken }] = await Promise.all([
    import('../serve/ui/handler.js'),
    import('../serve/ui/access.js'),
  ]);
  return openDashboard({
    access: { token: newUiToken(), port: 0, serverToken },
    context: mcp,
    version: packageVersion(),
  });
}

function packageVersion(): string {
  return (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
}

/** The address a browser on this machine opens: a wildcard listen address is reached at 127.0.0.1. */
function browserBase(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  if (address === '0.0.0.0' || address === '::') return `http://127.0.0.1:${port}`;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** What a running server answers with: the router, the metrics and the call service, made once. */
export interface Services {
  /** Absent when the server was started without skills: it answers calls only. */
  router: Router | undefined;
  metrics: RouteMetrics | undefined;
  calls: CallService;
}

/** The settings `startServices` reads: serve's flags, and `switchboard mcp`'s. */
export type ServiceFlags = Pick<ServeFlags, 'pool' | 'poolModel' | 'maxTimeout' | 'metrics'>;

/** Starts the router (when there are skills and `routing`), the metrics (with --metrics) and the call service. */
export async function startServices(
  config: SwitchboardConfig,
  flags: ServiceFlags,
  routing = true,
): Promise<Services> {
  const { CallService } = await import('../serve/call-handler.js');
  const calls = new CallService({
    config,
    poolSize: flags.pool,
    poolModel: flags.poolModel,
    maxTimeoutMs: flags.maxTimeout * 1000,
    onWarning: (message) => warn(`serve: ${message}`),
  });
  let router: Router | undefined;
  if (routing && (config.route.skills !== undefined || config.route.examples.length > 0)) {
    const { createRouter } = await import('../route/router.js');
    const options = await routerOptions(config);
    // One registry for the whole server: the LLM tier's calls share the API clients and the warm pool.
    if (options.llm !== undefined)
      options.llm.callOptions = { ...options.llm.callOptions, providers: calls.providers };
    router = createRouter(options);
    warnSkippedSkills(router);
  }
  let metrics: RouteMetrics | undefined;
  if (flags.metrics === true) {
    const { RouteMetrics } = await import('../observe/prometheus.js');
    const { collectDefaultMetrics } = await import('prom-client');
    metrics = new RouteMetrics({ skills: router?.skills.map((skill) => skill.name) ?? [] });
    collectDefaultMetrics({ register: metrics.registry });
    metrics.watchBreakers(() => calls.breakers());
  }
  return { router, metrics, calls };
}

/** Who may call the server and what `/mcp`'s command-running tools may do: flags over switchboard.yaml. */
interface AccessSettings {
  guard: GuardSettings;
  commands: CommandPolicy;
}

async function accessSettings(config: SwitchboardConfig, flags: ServeFlags): Promise<AccessSettings> {
  const { parseAllowedOrigins } = await import('../serve/request-guard.js');
  const { resolveRepoRoots } = await import('../mcp/command-policy.js');
  const allowCommands = flags.allowCommands === true || config.serve.allowCommands;
  const repoRoots = resolveRepoRoots([...config.serve.repoRoots, ...flags.repoRoot]);
  if (allowCommands && repoRoots.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', '--allow-commands needs at least one --repo-root', {
      hint: 'name the folders agents and workflows may work in: --repo-root DIR (repeatable)',
    });
  }
  return {
    guard: {
      listenHost: flags.host,
      allowedOrigins: parseAllowedOrigins([...config.serve.allowedOrigins, ...flags.allowOrigin]),
    },
    commands: { allowCommands, repoRoots },
  };
}

/**
 * Lets a request through to the routes, or answers it: 401 without the token a caller needs, 403 for
 * a Host or Origin the server does not answer (a web page's), 415 for a POST body not sent as JSON,
 * 204 for an allowed origin's CORS preflight.
 */
function admit(
  request: IncomingMessage,
  response: ServerResponse,
  token: string,
  access: AccessSettings,
  dashboard: Dashboard | undefined,
  gatewayOn: boolean,
): boolean {
  const url = new URL(request.url ?? '/', 'http://localhost');
  // The dashboard's routes want its token whoever calls: a page in the user's own browser is on
  // loopback too. Holding it is what a rebinding page cannot do, so Host is not checked then.
  const ui = dashboard !== undefined && isUiPath(url.pathname);
  if (ui && !dashboard.admits(request, url)) {
    dashboard.unauthorized(request, response);
    return false;
  }
  // The gateway takes virtual keys as well as the token: it authenticates (and guards) its own requests.
  if (!ui && gatewayOn && isGatewayPath(url.pathname)) return true;
  // Health is all a caller without the token learns: whether the server is up.
  const open = !ui && url.pathname === '/healthz';
  const holdsToken = ui || authorize(callerOf(request), token);
  // A web page's request (foreign Host or Origin, a body not sent as JSON) is told so first: it is
  // refused either way, and 403 says why better than 401.
  const refusal = checkRequest(request, access.guard, holdsToken);
  if (refusal !== undefined) {
    // The body is left unread, as for a 401.
    response.setHeader('connection', 'close');
    sendError(response, refusal.status, refusal.error);
    return false;
  }
  const cors = corsFor(request, access.guard.allowedOrigins);
  for (const [name, value] of Object.entries(cors.headers)) response.setHeader(name, value);
  // A browser's preflight never carries credentials; answering it acts on nothing and reveals nothing.
  if (cors.preflight) {
    response.writeHead(204).end();
    return false;
  }
  if (!holdsToken && !open) {
    unauthorized(response);
    return false;
  }
  return true;
}

function unauthorized(response: ServerResponse): void {
  response.setHeader('www-authenticate', 'Bearer');
  // The body is left unread: close the connection rather than read a stranger's upload.
  response.setHeader('connection', 'close');
  sendError(
    response,
    401,
    new SwitchboardError('SERVER_AUTH', 'this server answers only callers that send its token', {
      hint: 'send "Authorization: Bearer <token>": the token is SWITCHBOARD_SERVER_TOKEN, or the serve-<port>.token file in the state folder serve was started with (switchboard call/route --server find it)',
    }),
  );
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(listenError(error, host, port));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    // A burst of new connections (many clients at once through the gateway) waits in the kernel's
    // queue instead of being dropped at Node's default of 511; the kernel caps it at somaxconn.
    server.listen({ port, host, backlog: LISTEN_BACKLOG });
  });
}

/** Connections the kernel may queue for serve before it accepts them. */
const LISTEN_BACKLOG = 4096;

function listenError(error: NodeJS.ErrnoException, host: string, port: number): SwitchboardError {
  if (error.code === 'EADDRINUSE') {
    return new SwitchboardError('PORT_IN_USE', `port ${port} on ${host} is already in use`, {
      hint: 'stop the process using it, or pass another --port (0 picks a free one)',
      cause: error,
    });
  }
  if (error.code === 'EACCES') {
    return new SwitchboardError('INVALID_INPUT', `not allowed to listen on port ${port}`, {
      hint: 'ports below 1024 need privileges; pass --port 1024 or above',
      cause: error,
    });
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    return new SwitchboardError('INVALID_INPUT', `cannot listen on ${host}: not an address of this machine`, {
      hint: 'pass --host 127.0.0.1, or 0.0.0.0 for every interface',
      cause: error,
    });
  }
  return new SwitchboardError('INTERNAL', `cannot listen on ${host}:${port}: ${error.message}`, {
    cause: error,
  });
}

function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Calls `stop` once no request has come or been under way for `idleMs` (`--idle-exit`): a server a
 * client started in the background ends by itself. The timer is re-armed for what is left of the
 * period after each request.
 */
function stopWhenIdle(
  idleMs: number,
  { lastRequestAt, busy, stop }: { lastRequestAt: () => number; busy: () => boolean; stop: () => void },
): { cancel(): void } {
  let timer: NodeJS.Timeout;
  const check = () => {
    const quietFor = Date.now() - lastRequestAt();
    if (busy() || quietFor < idleMs) {
      timer = setTimeout(check, busy() ? idleMs : idleMs - quietFor);
      timer.unref();
      return;
    }
    process.stdout.write(`switchboard: no request for ${idleMs / 1000} s; stopping\n`);
    stop();
  };
  timer = setTimeout(check, idleMs);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
}

/**
 * `stopped` resolves once SIGINT or SIGTERM (or `stop`, the same) has closed the server. Requests in
 * flight may finish within the grace period; after it, or at a second signal, they are aborted and
 * their connections closed.
 */
function untilSignal(
  server: Server,
  inFlight: AbortController,
  onStop: () => void,
  graceMs: number,
): { stopped: Promise<void>; stop: () => void } {
  let stopNow: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const cutOff = () => {
      inFlight.abort();
      server.closeAllConnections();
    };
    // Past the grace the aborted calls still answer (503, ABORTED) so their clients know; a connection
    // that holds out after that is cut.
    const graceOver = () => {
      inFlight.abort();
      setTimeout(() => server.closeAllConnections(), 1_000).unref();
    };
    const stop = () => {
      if (stopping) return cutOff();
      stopping = true;
      onStop();
      server.close(() => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      });
      server.closeIdleConnections();
      setTimeout(graceOver, graceMs).unref();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    stopNow = stop;
  });
  return { stopped, stop: () => stopNow() };
}

interface HandlerContext extends Services {
  /** What `/mcp`'s tools work with; its runs outlive the requests that started them. */
  mcp: McpContext;
  abortSignal: AbortSignal;
  /** The dashboard's routes, with --ui (and `switchboard ui`). */
  dashboard: Dashboard | undefined;
  /** The vendors' wire protocols under /v1 (not in `switchboard ui`). */
  gateway: Gateway | undefined;
  mode: ServerMode;
}

function isGatewayPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

/**
 * The gateway under /v1: the server token, and the virtual keys of the ledger (`switchboard keys
 * create`), let a client in. Without a ledger there are no keys: the token only.
 */
async function startGateway(
  config: SwitchboardConfig,
  services: Services,
  token: string,
  guard: GuardSettings,
): Promise<{ gateway: Gateway; close: () => Promise<void> }> {
  const [{ Gateway }, { withServerToken }] = await Promise.all([
    import('../serve/gateway/gateway.js'),
    import('../serve/gateway/principal.js'),
  ]);
  const ledger = services.calls.ledger(undefined);
  const keys = ledger === undefined ? undefined : await startKeys(config, ledger);
  // `gateway.keep_alive_seconds` and `gateway.stall_seconds` of the config; these two variables
  // override them in milliseconds, for tests that cannot wait seconds.
  const keepAlive = Number(process.env['SWITCHBOARD_GATEWAY_KEEPALIVE_MS']);
  const stall = Number(process.env['SWITCHBOARD_GATEWAY_STALL_MS']);
  const gateway = new Gateway({
    config,
    providers: services.calls.providers,
    ledger: () => services.calls.ledger(undefined),
    auth: withServerToken(token, keys?.auth, { forwardClientKey: config.gateway.forwardClientKey }),
    guard,
    maxMs: services.calls.maxTimeoutMs,
    ...(services.metrics === undefined ? {} : { metrics: services.metrics }),
    ...(Number.isFinite(keepAlive) && keepAlive > 0 ? { keepAliveMs: keepAlive } : {}),
    ...(Number.isFinite(stall) && stall > 0 ? { stallMs: stall } : {}),
  });
  return { gateway, close: async () => keys?.directory.close() };
}

/** The ledger's virtual keys, kept in memory and refreshed, and their limits. */
async function startKeys(config: SwitchboardConfig, ledger: Ledger) {
  const [{ KeyDirectory }, { KeyLimits }, { loadKeySecret }, { virtualKeyAuth }] = await Promise.all([
    import('../keys/virtual-keys.js'),
    import('../keys/key-limits.js'),
    import('../keys/key-secret.js'),
    import('../serve/gateway/key-auth.js'),
  ]);
  let secret: ReturnType<typeof loadKeySecret>;
  try {
    secret = loadKeySecret({ stateDir: config.stateDir });
  } catch (error) {
    // A state folder the server cannot write (or a bad SWITCHBOARD_KEY_SECRET) leaves the token working.
    warn(`serve: virtual keys are off: ${toSwitchboardError(error).message}`);
    return undefined;
  }
  const directory = new KeyDirectory({ ledger, secret });
  await directory.ready();
  const limits = new KeyLimits({
    ledger,
    onError: (error) =>
      warn(`serve: key limits counted in this process only: ${toSwitchboardError(error).message}`),
  });
  return { directory, auth: virtualKeyAuth(directory, limits) };
}

function isUiPath(path: string): boolean {
  return path === '/ui' || path.startsWith('/ui/');
}

async function mcpContext(
  config: SwitchboardConfig,
  { router, calls }: Services,
  abortSignal: AbortSignal,
  commands: CommandPolicy,
): Promise<McpContext> {
  const { BackgroundRuns } = await import('../mcp/background-runs.js');
  return { config, router, calls, runs: new BackgroundRuns(), abortSignal, commands };
}

/** Runs `/mcp` started and left going get the grace period to end, then are aborted and waited for. */
async function finishMcpRuns(mcp: McpContext, inFlight: AbortController, graceMs: number): Promise<void> {
  if (mcp.runs.size === 0) return;
  const { waitAtMost } = await import('../mcp/background-runs.js');
  await waitAtMost(mcp.runs.drain(), graceMs);
  inFlight.abort();
  await mcp.runs.drain();
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  { router, metrics, calls, mcp, abortSignal, dashboard, gateway, mode }: HandlerContext,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const path = url.pathname;
  const method = request.method ?? 'GET';
  if (gateway !== undefined && isGatewayPath(path)) return gateway.handle(request, response, url);
  if (dashboard !== undefined && isUiPath(path)) {
    if (path === '/ui') {
      response.writeHead(308, { location: '/ui/' }).end();
      return;
    }
    return dashboard.handle(request, response, url);
  }
  if (mode.uiOnly && path !== '/healthz') {
    return sendError(
      response,
      404,
      new SwitchboardError('INVALID_INPUT', `no such endpoint: ${path}`, {
        hint: 'this is `switchboard ui`: the dashboard is at /ui/; for /route, /call and /mcp start `switchboard serve`',
      }),
    );
  }
  if (path === '/mcp') {
    const { handleMcpRequest } = await import('../mcp/http.js');
    return handleMcpRequest(request, response, mcp);
  }
  if (path === '/call') {
    if (method !== 'POST') return methodNotAllowed(response, 'POST');
    return calls.handle(request, response, abortSignal);
  }
  if (path === '/route' && router !== undefined) {
    if (method !== 'POST') return methodNotAllowed(response, 'POST');
    return routeRequest(request, response, { router, metrics, abortSignal });
  }
  if (path === '/healthz') {
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET, HEAD');
    return sendJson(response, 200, {
      status: 'ok',
      skills: router?.skills.length ?? 0,
      ...(router === undefined ? {} : { mode: router.mode }),
    });
  }
  if (path === '/metrics' && metrics !== undefined) {
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET, HEAD');
    const text = await metrics.metrics();
    response.writeHead(200, { 'content-type': metrics.contentType });
    response.end(text);
    return;
  }
  sendError(
    response,
    404,
    new SwitchboardError('INVALID_INPUT', notFound(path, router), { hint: notFoundHint(path, router) }),
  );
}

function notFound(path: string, router: Router | undefined): string {
  return path === '/route' && router === undefined
    ? 'this server routes nothing: it was started without skills'
    : `no such endpoint: ${path}`;
}

function notFoundHint(path: string, router: Router | undefined): string {
  if (path === '/metrics') return 'start the server with --metrics';
  if (isUiPath(path)) return 'start the server with --ui, or run `switchboard ui`';
  if (path === '/route' && router === undefined) return 'start switchboard serve with --skills DIR';
  return 'use POST /call, POST /route, POST /mcp, or GET /healthz';
}
