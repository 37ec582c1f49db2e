import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { SwitchboardError } from './errors.js';
import { normalizeBaseUrl } from './base-url.js';
import { refuseUrlAsPath } from './url-path.js';
import { loadYaml, loadZod } from './lazy-packages.js';
import { ROUTE_MODES, type RouteMode, type SkillThresholds } from './route-types.js';
import { gatewayFileSchema, gatewaySettings, type GatewaySettings } from './gateway-settings.js';

export type { GatewaySettings } from './gateway-settings.js';

/** The config file looked for in the working directory when `--config` is not given. */
export const DEFAULT_CONFIG_FILE = 'switchboard.yaml';

/**
 * The file's schema. Built from zod and YAML loaded with `require` (both ship CommonJS) only when there
 * is a file to read, so that a command run without one, or a program that imports the library to
 * route, never pays for them; `loadConfig` stays synchronous.
 */
function configFileSchema(z: ReturnType<typeof loadZod>) {
  const probability = z.number().min(0).max(1);
  return z.strictObject({
    state_dir: z.string().optional(),
    /** postgres://… : the ledger, agent runs and workflow runs live there instead of the SQLite file. */
    database_url: z
      .string()
      .regex(/^postgres(ql)?:\/\//i, 'a postgres:// URL')
      .optional(),
    ledger: z
      .strictObject({
        enabled: z.boolean().optional(),
        store_text: z.boolean().optional(),
        /** Route decisions older than this (30m, 24h, 90d) are pruned by `db prune` and by a running serve. */
        retention: z
          .string()
          .regex(/^\d+(\.\d+)?[mhd]$/, 'a duration such as 90d, 24h or 30m')
          // 0d would have a running serve prune every route decision (and the whole cache) every hour.
          .refine((value) => durationMs(value) > 0, 'a duration longer than 0, such as 90d')
          .optional(),
      })
      .optional(),
    claude: z
      .strictObject({
        executable: z.string().optional(),
        base_url: z.string().url().optional(),
        max_retries: z.number().int().min(0).max(20).optional(),
        timeout_seconds: z.number().positive().optional(),
        idle_timeout_seconds: z.number().positive().optional(),
      })
      .optional(),
    /**
     * Base URLs beside the provider's own that a spec may name (`openai@URL:model`), each with the
     * environment variable holding the key it gets (none unless named).
     */
    providers: z
      .strictObject({
        openai: z
          .strictObject({
            endpoints: z
              .array(
                z.strictObject({
                  url: z
                    .string()
                    .refine(
                      (value) => normalizeBaseUrl(value) !== undefined,
                      'an http(s) base URL without user, password, query or fragment, e.g. http://127.0.0.1:11434/v1',
                    ),
                  api_key_env: z
                    .string()
                    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable')
                    .optional(),
                }),
              )
              .optional(),
          })
          .optional(),
      })
      .optional(),
    /** Named provider chains: `drafter: claude:sonnet,anthropic:claude-sonnet-4-5`. */
    roles: z
      .record(
        z.string().regex(/^[a-z][a-z0-9_-]*$/i, 'role names are letters, digits, - and _'),
        z.string().min(1),
      )
      .optional(),
    call: z
      .strictObject({
        schema_retries: z.number().int().min(0).max(10).optional(),
        stage_timeout_seconds: z.number().positive().optional(),
        max_attempts: z.number().int().min(1).max(50).optional(),
        retries_per_provider: z.number().int().min(0).max(10).optional(),
        /** The earlier name of `breaker.half_open_after_seconds`, still read. */
        cooldown_seconds: z.number().positive().optional(),
        /** The circuit breaker kept per provider spec and endpoint (docs/call.md). */
        breaker: z
          .strictObject({
            failure_ratio: z.number().gt(0).max(1).optional(),
            minimum_requests: z.number().int().min(1).optional(),
            window_seconds: z.number().positive().optional(),
            half_open_after_seconds: z.number().positive().optional(),
            max_half_open_after_seconds: z.number().positive().optional(),
            probes: z.number().int().min(1).optional(),
          })
          .refine(
            (breaker) =>
              breaker.max_half_open_after_seconds === undefined ||
              breaker.max_half_open_after_seconds >= (breaker.half_open_after_seconds ?? 0),
            { message: 'max_half_open_after_seconds must be at least half_open_after_seconds' },
          )
          .optional(),
      })
      .refine(
        (call) => call.cooldown_seconds === undefined || call.breaker?.half_open_after_seconds === undefined,
        {
          message:
            'give call.breaker.half_open_after_seconds or call.cooldown_seconds (its earlier name), not both',
        },
      )
      .optional(),
    budgets: z
      .strictObject({
        max_cost_per_call_usd: z.number().positive().optional(),
        rules: z
          .array(
            z.strictObject({
              provider: z.string().optional(),
              tag: z
                .string()
                .regex(/^[^=]+=.*$/, 'a tag is key=value')
                .optional(),
              // 0 blocks every call in the rule's scope (a kill switch), not a mistake.
              daily_usd: z.number().min(0).optional(),
              monthly_usd: z.number().min(0).optional(),
              warn_at: z.number().min(0).max(1).optional(),
            }),
          )
          .optional(),
      })
      .optional(),
    prices: z
      .record(
        z.string(),
        z.strictObject({
          input: z.number().min(0),
          output: z.number().min(0),
          cache_read: z.number().min(0).optional(),
          cache_write: z.number().min(0).optional(),
        }),
      )
      .optional(),
    gemini: z
      .strictObject({
        on_downgrade: z.enum(['error', 'warn']).optional(),
        forbidden_models: z.array(z.string()).optional(),
      })
      .optional(),
    route: z
      .strictObject({
        skills: z.string().optional(),
        mode: z.enum(ROUTE_MODES).optional(),
        provider: z.string().min(1).optional(),
        llm_timeout_seconds: z.number().positive().optional(),
        llm_confidence_threshold: probability.optional(),
        llm_race: z.boolean().optional(),
        confidence_threshold: probability.optional(),
        margin_threshold: probability.optional(),
        /** Thresholds of a skill's own, by skill name; they win over the skill's front matter. */
        skill_thresholds: z
          .record(
            z.string().min(1),
            z.strictObject({
              confidence_threshold: probability.optional(),
              margin_threshold: probability.optional(),
            }),
          )
          .optional(),
        rules_file: z.string().optional(),
        examples: z.union([z.string(), z.array(z.string())]).optional(),
        strict: z.boolean().optional(),
        cache: z
          .strictObject({
            enabled: z.boolean().optional(),
            ttl_seconds: z.number().positive().optional(),
            max_entries: z.number().int().nonnegative().optional(),
          })
          .optional(),
      })
      .optional(),
    /** `switchboard worker` and `--enqueue` timings (pg-boss). */
    workers: z
      .strictObject({
        concurrency: z.number().int().min(1).max(64).optional(),
        // pg-boss refuses a heartbeat below 10 s.
        heartbeat_seconds: z.number().int().min(10).max(3600).optional(),
        supervise_interval_seconds: z.number().min(1).max(3600).optional(),
        monitor_interval_seconds: z.number().min(1).max(3600).optional(),
        polling_interval_seconds: z.number().min(0.5).max(3600).optional(),
        retry_limit: z.number().int().min(0).max(100).optional(),
        grace_seconds: z.number().min(0).max(86_400).optional(),
      })
      .optional(),
    /** What `switchboard serve` lets callers do (see docs/serve.md, "Threat model"). */
    serve: z
      .strictObject({
        /** Web origins (`https://app.example`) whose pages may call the server. */
        allowed_origins: z.array(z.string().min(1)).optional(),
        /** Let HTTP callers use `agent_run` and command-running workflows, in `repo_roots` only. */
        allow_commands: z.boolean().optional(),
        repo_roots: z.array(z.string().min(1)).optional(),
        /** Ask loopback callers for the token too (a machine shared with other users). */
        // No effect since every caller needs the token; accepted so older files still load.
        require_token: z.boolean().optional(),
      })
      .optional(),
    /** `switchboard serve`'s gateway for unchanged clients: model aliases, Claude Code routing, betas (docs/config.md). */
    gateway: gatewayFileSchema(z).optional(),
    workflows: z
      .strictObject({
        /** Conductor provider name → Switchboard spec or chain: `copilot: claude:sonnet`. */
        provider_map: z
          .record(z.string().min(1), z.string().min(1, 'map a provider to a spec such as claude:sonnet'))
          .optional(),
      })
      .optional(),
  });
}

type ConfigFile = z.infer<ReturnType<typeof configFileSchema>>;

/** Routing settings after merging file, environment and flags. Paths are absolute. */
export interface RouteSettings {
  skills?: string;
  mode: RouteMode;
  /** Provider spec or chain for the LLM tier (`hybrid`, `llm-only`). */
  provider?: string;
  llmTimeoutMs: number;
  llmConfidenceThreshold: number;
  /** Start the LLM beside the local tiers and cancel it when they are confident. */
  llmRace: boolean;
  confidenceThreshold: number;
  marginThreshold: number;
  /**
   * Skills' own thresholds by name (`route.skill_thresholds`): they judge a request whose top
   * candidate is that skill, over its front matter; a field left out falls back to it, then the global.
   */
  skillThresholds: Record<string, SkillThresholds>;
  rulesFile?: string;
  examples: string[];
  strict: boolean;
  cache: { enabled: boolean; ttlMs: number; maxEntries: number };
}

/** Claude Code provider settings (`claude:` in switchboard.yaml). */
export interface ClaudeSettings {
  executable?: string;
  baseUrl?: string;
  maxRetries?: number;
  timeoutMs?: number;
  idleTimeoutMs?: number;
}

/** How `call()` retries, falls back and spends (`call:`, `budgets:`, `roles:`, `prices:` in switchboard.yaml). */
export interface CallSettings {
  roles: Record<string, string>;
  schemaRetries?: number;
  stageTimeoutMs?: number;
  maxAttempts?: number;
  retriesPerProvider?: number;
  /** The circuit breaker's settings (`call.breaker`), in milliseconds; see `CircuitBreakerOptions`. */
  breaker?: {
    failureRatio?: number;
    minimumRequests?: number;
    windowMs?: number;
    halfOpenAfterMs?: number;
    maxHalfOpenAfterMs?: number;
    probes?: number;
  };
  maxCostPerCallUsd?: number;
  budgetRules: { provider?: string; tag?: string; dailyUsd?: number; monthlyUsd?: number; warnAt?: number }[];
  prices: Record<string, { input: number; output: number; cacheRead: number; cacheWrite: number }>;
  gemini: { onDowngrade?: 'error' | 'warn'; forbiddenModels?: string[] };
}

/** A base URL a spec may name (`providers.<name>.endpoints`), with the variable holding its key. */
export interface EndpointSettings {
  url: string;
  /** The environment variable whose value is sent as this endpoint's key; none is sent without it. */
  apiKeyEnv?: string;
}

export interface SwitchboardConfig {
  /** Absolute path of the config file that was read, if any. */
  configFile?: string;
  stateDir: string;
  /** A PostgreSQL URL for every store (`SWITCHBOARD_DATABASE_URL`, else `database_url`); the SQLite file when absent. */
  databaseUrl?: string;
  ledger: {
    enabled: boolean;
    storeText: boolean;
    /** How long route decisions are kept (`ledger.retention`), in milliseconds; kept forever without it. */
    retentionMs?: number;
  };
  route: RouteSettings;
  claude: ClaudeSettings;
  call: CallSettings;
  /** Endpoints by provider name (only `openai` takes a base URL in a spec). */
  endpoints: { openai: EndpointSettings[] };
  workflows: WorkflowSettings;
  workers: WorkerSettings;
  serve: ServeSettings;
  /** The gateway's aliases, routes and header policy (`gateway:`), defaults applied. */
  gateway: GatewaySettings;
}

/** What `switchboard serve` lets callers do (`serve:` in switchboard.yaml; serve's flags add to it). */
export interface ServeSettings {
  /** Origins whose web pages may call the server, as written (serve checks and normalises them). */
  allowedOrigins: string[];
  /** Command-running MCP tools over HTTP (`agent_run`, workflows with scripts or agents). @default false */
  allowCommands: boolean;
  /** Absolute folders those tools may work in. */
  repoRoots: string[];
}

/**
 * How `switchboard worker` claims and keeps jobs, and how `--enqueue` sends them (`workers:` in
 * switchboard.yaml). A dead worker's job is picked up again within about
 * `heartbeatSeconds + max(superviseIntervalSeconds, monitorIntervalSeconds) + pollingIntervalSeconds`.
 */
export interface WorkerSettings {
  /** Jobs one worker runs at once. @default 1 */
  concurrency: number;
  /**
   * A job whose worker has not reported for this long is given to another worker, and a workflow run
   * whose worker (on another machine) has not stamped it for this long is taken over. @default 30
   */
  heartbeatSeconds: number;
  /** How often a worker looks for jobs whose worker died. @default 10 */
  superviseIntervalSeconds: number;
  /** How often one of the workers sweeps each queue for expired and silent jobs. @default 10 */
  monitorIntervalSeconds: number;
  /** How often an idle worker asks for a job. @default 2 */
  pollingIntervalSeconds: number;
  /** Pickups of a job after its worker died or stopped, before it goes to the dead-letter queue. @default 5 */
  retryLimit: number;
  /** How long a stopping worker lets its running jobs finish. @default 30 */
  graceSeconds: number;
}

/** Defaults of `workers:`: a dead worker's job is picked up again within about 42 s. */
export const DEFAULT_WORKER_SETTINGS: WorkerSettings = {
  concurrency: 1,
  heartbeatSeconds: 30,
  superviseIntervalSeconds: 10,
  monitorIntervalSeconds: 10,
  pollingIntervalSeconds: 2,
  retryLimit: 5,
  graceSeconds: 30,
};

/** Workflow settings (`workflows:` in switchboard.yaml). */
export interface WorkflowSettings {
  /**
   * Conductor provider names a workflow file uses → Switchboard spec or chain (`copilot` →
   * `claude:sonnet`); `--provider-map name=spec` adds to it and wins.
   */
  providerMap: Record<string, string>;
}

/**
 * Defaults for the abstain thresholds. They were chosen on CLINC150's validation split and the
 * routing dev sets; `switchboard fit` picks better ones for a given skill set.
 */
export const DEFAULT_CONFIDENCE_THRESHOLD = 0.3;
export const DEFAULT_MARGIN_THRESHOLD = 0.05;

/** Settings a caller (the CLI's flags) can force over the file and environment. */
export interface ConfigOverrides {
  stateDir?: string;
  ledger?: boolean;
  storeText?: boolean;
  route?: Partial<Omit<RouteSettings, 'cache' | 'llmTimeoutMs' | 'llmConfidenceThreshold'>> & {
    cache?: boolean;
  };
}

export interface LoadConfigOptions {
  /** An explicit config file; it must exist. Otherwise `switchboard.yaml` in `cwd` is read if present. */
  configFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  overrides?: ConfigOverrides;
}

/** Loads configuration: `switchboard.yaml` < `SWITCHBOARD_*` environment < explicit overrides (flags). */
export function loadConfig({
  configFile,
  cwd = process.cwd(),
  env = process.env,
  overrides = {},
}: LoadConfigOptions = {}): SwitchboardConfig {
  const path = configFile !== undefined ? resolve(cwd, configFile) : resolve(cwd, DEFAULT_CONFIG_FILE);
  let file: ConfigFile = {};
  let fileDirectory = cwd;
  const exists = existsSync(path);
  if (configFile !== undefined && !exists) {
    throw new SwitchboardError('CONFIG_INVALID', `config file ${configFile} does not exist`, {
      hint: 'check the --config path',
    });
  }
  if (exists) {
    file = parseConfigFile(path);
    fileDirectory = dirname(path);
  }

  const fromFile = (value: string | undefined): string | undefined =>
    value === undefined ? undefined : resolve(fileDirectory, value);
  const fromCwd = (value: string | undefined): string | undefined =>
    value === undefined ? undefined : resolve(cwd, value);

  const environment = readEnvironment(env);
  const routeOverrides = overrides.route ?? {};
  const fileExamples = file.route?.examples;
  const examples =
    routeOverrides.examples?.map((value) => resolve(cwd, value)) ??
    environment.examples?.map((value) => resolve(cwd, value)) ??
    (typeof fileExamples === 'string' ? [fileExamples] : (fileExamples ?? [])).map((value) =>
      resolve(fileDirectory, value),
    );

  const route: RouteSettings = {
    mode: routeOverrides.mode ?? environment.mode ?? file.route?.mode ?? 'local',
    confidenceThreshold:
      routeOverrides.confidenceThreshold ??
      environment.confidenceThreshold ??
      file.route?.confidence_threshold ??
      DEFAULT_CONFIDENCE_THRESHOLD,
    marginThreshold:
      routeOverrides.marginThreshold ??
      environment.marginThreshold ??
      file.route?.margin_threshold ??
      DEFAULT_MARGIN_THRESHOLD,
    skillThresholds: routeOverrides.skillThresholds ?? skillThresholds(file.route?.skill_thresholds),
    examples,
    llmTimeoutMs: (file.route?.llm_timeout_seconds ?? 10) * 1000,
    llmConfidenceThreshold: file.route?.llm_confidence_threshold ?? 0.5,
    llmRace: file.route?.llm_race ?? false,
    strict: routeOverrides.strict ?? environment.strict ?? file.route?.strict ?? false,
    cache: {
      enabled: routeOverrides.cache ?? environment.cache ?? file.route?.cache?.enabled ?? true,
      ttlMs: (file.route?.cache?.ttl_seconds ?? 3600) * 1000,
      maxEntries: file.route?.cache?.max_entries ?? 10_000,
    },
  };
  const skills =
    fromCwd(routeOverrides.skills) ?? fromCwd(environment.skills) ?? fromFile(file.route?.skills);
  if (skills !== undefined) route.skills = skills;
  const provider = routeOverrides.provider ?? environment.provider ?? file.route?.provider;
  if (provider !== undefined) route.provider = provider;
  const rulesFile =
    fromCwd(routeOverrides.rulesFile) ?? fromCwd(environment.rulesFile) ?? fromFile(file.route?.rules_file);
  if (rulesFile !== undefined) route.rulesFile = rulesFile;

  refuseUrlAsPath(overrides.stateDir, '--state-dir');
  refuseUrlAsPath(environment.stateDir, 'SWITCHBOARD_STATE_DIR', 'CONFIG_INVALID');
  refuseUrlAsPath(file.state_dir, `state_dir in ${path}`, 'CONFIG_INVALID');
  const config: SwitchboardConfig = {
    stateDir:
      fromCwd(overrides.stateDir) ??
      fromCwd(environment.stateDir) ??
      fromFile(file.state_dir) ??
      resolve(cwd, '.switchboard'),
    ledger: {
      enabled: overrides.ledger ?? environment.ledger ?? file.ledger?.enabled ?? true,
      storeText: overrides.storeText ?? environment.storeText ?? file.ledger?.store_text ?? false,
      ...(file.ledger?.retention === undefined ? {} : { retentionMs: durationMs(file.ledger.retention) }),
    },
    route,
    claude: claudeSettings(file.claude, fromFile, environment.claudeExecutable),
    call: callSettings(file),
    endpoints: {
      openai: (file.providers?.openai?.endpoints ?? []).map(({ url, api_key_env }) =>
        api_key_env === undefined ? { url } : { url, apiKeyEnv: api_key_env },
      ),
    },
    workflows: { providerMap: { ...file.workflows?.provider_map } },
    workers: workerSettings(file.workers),
    serve: {
      allowedOrigins: [...(file.serve?.allowed_origins ?? [])],
      allowCommands: file.serve?.allow_commands ?? false,
      repoRoots: (file.serve?.repo_roots ?? []).map((root) => resolve(fileDirectory, root)),
    },
    gateway: gatewaySettings(file.gateway, file.roles ?? {}, path),
  };
  if (exists) config.configFile = path;
  const databaseUrl = env.SWITCHBOARD_DATABASE_URL?.trim() || file.database_url;
  if (databaseUrl !== undefined && databaseUrl !== '') config.databaseUrl = databaseUrl;
  return config;
}

function skillThresholds(
  file: NonNullable<ConfigFile['route']>['skill_thresholds'],
): Record<string, SkillThresholds> {
  const settings: Record<string, SkillThresholds> = {};
  for (const [skill, thresholds] of Object.entries(file ?? {})) {
    const own: SkillThresholds = {};
    if (thresholds.confidence_threshold !== undefined)
      own.confidenceThreshold = thresholds.confidence_threshold;
    if (thresholds.margin_threshold !== undefined) own.marginThreshold = thresholds.margin_threshold;
    settings[skill] = own;
  }
  return settings;
}

function callSettings(file: ConfigFile): CallSettings {
  const settings: CallSettings = {
    roles: { ...file.roles },
    budgetRules: (file.budgets?.rules ?? []).map((rule) => {
      const converted: CallSettings['budgetRules'][number] = {};
      if (rule.provider !== undefined) converted.provider = rule.provider;
      if (rule.tag !== undefined) converted.tag = rule.tag;
      if (rule.daily_usd !== undefined) converted.dailyUsd = rule.daily_usd;
      if (rule.monthly_usd !== undefined) converted.monthlyUsd = rule.monthly_usd;
      if (rule.warn_at !== undefined) converted.warnAt = rule.warn_at;
      return converted;
    }),
    prices: Object.fromEntries(
      Object.entries(file.prices ?? {}).map(([model, price]) => [
        model,
        {
          input: price.input,
          output: price.output,
          cacheRead: price.cache_read ?? 0,
          cacheWrite: price.cache_write ?? 0,
        },
      ]),
    ),
    gemini: {},
  };
  if (file.call?.schema_retries !== undefined) settings.schemaRetries = file.call.schema_retries;
  if (file.call?.stage_timeout_seconds !== undefined)
    settings.stageTimeoutMs = file.call.stage_timeout_seconds * 1000;
  if (file.call?.max_attempts !== undefined) settings.maxAttempts = file.call.max_attempts;
  if (file.call?.retries_per_provider !== undefined)
    settings.retriesPerProvider = file.call.retries_per_provider;
  settings.breaker = breakerSettings(file.call);
  if (file.budgets?.max_cost_per_call_usd !== undefined)
    settings.maxCostPerCallUsd = file.budgets.max_cost_per_call_usd;
  if (file.gemini?.on_downgrade !== undefined) settings.gemini.onDowngrade = file.gemini.on_downgrade;
  if (file.gemini?.forbidden_models !== undefined)
    settings.gemini.forbiddenModels = file.gemini.forbidden_models;
  return settings;
}

function workerSettings(file: ConfigFile['workers']): WorkerSettings {
  const defaults = DEFAULT_WORKER_SETTINGS;
  return {
    concurrency: file?.concurrency ?? defaults.concurrency,
    heartbeatSeconds: file?.heartbeat_seconds ?? defaults.heartbeatSeconds,
    superviseIntervalSeconds: file?.supervise_interval_seconds ?? defaults.superviseIntervalSeconds,
    monitorIntervalSeconds: file?.monitor_interval_seconds ?? defaults.monitorIntervalSeconds,
    pollingIntervalSeconds: file?.polling_interval_seconds ?? defaults.pollingIntervalSeconds,
    retryLimit: file?.retry_limit ?? defaults.retryLimit,
    graceSeconds: file?.grace_seconds ?? defaults.graceSeconds,
  };
}

function claudeSettings(
  file: ConfigFile['claude'],
  fromFile: (value: string | undefined) => string | undefined,
  environmentExecutable: string | undefined,
): ClaudeSettings {
  const settings: ClaudeSettings = {};
  const executable = environmentExecutable ?? fromFile(file?.executable);
  if (executable !== undefined) settings.executable = executable;
  if (file?.base_url !== undefined) settings.baseUrl = file.base_url;
  if (file?.max_retries !== undefined) settings.maxRetries = file.max_retries;
  if (file?.timeout_seconds !== undefined) settings.timeoutMs = file.timeout_seconds * 1000;
  if (file?.idle_timeout_seconds !== undefined) settings.idleTimeoutMs = file.idle_timeout_seconds * 1000;
  return settings;
}

function parseConfigFile(path: string): ConfigFile {
  let data: unknown;
  try {
    const { parse } = loadYaml();
    data = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new SwitchboardError('CONFIG_INVALID', `${path} is not valid YAML: ${message}`, {
      hint: 'fix the syntax at the position shown',
    });
  }
  const result = configFileSchema(loadZod()).safeParse(data ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at "${issue.path.join('.')}"`;
    throw new SwitchboardError('CONFIG_INVALID', `${path}${where}: ${issue?.message ?? 'invalid config'}`, {
      hint: 'see the configuration section of the README for the accepted keys',
    });
  }
  return result.data;
}

interface EnvironmentSettings {
  provider?: string;
  claudeExecutable?: string;
  stateDir?: string;
  ledger?: boolean;
  storeText?: boolean;
  skills?: string;
  mode?: RouteMode;
  confidenceThreshold?: number;
  marginThreshold?: number;
  rulesFile?: string;
  examples?: string[];
  strict?: boolean;
  cache?: boolean;
}

function readEnvironment(env: NodeJS.ProcessEnv): EnvironmentSettings {
  const settings: EnvironmentSettings = {};
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const flag = (name: string): boolean | undefined => {
    const value = text(name);
    if (value === undefined) return undefined;
    if (/^(1|true|yes|on)$/i.test(value)) return true;
    if (/^(0|false|no|off)$/i.test(value)) return false;
    throw new SwitchboardError('CONFIG_INVALID', `${name}=${value} is not a boolean`, {
      hint: `set ${name} to true or false`,
    });
  };
  const fraction = (name: string): number | undefined => {
    const value = text(name);
    if (value === undefined) return undefined;
    const number = Number(value);
    if (!Number.isFinite(number) || number < 0 || number > 1) {
      throw new SwitchboardError('CONFIG_INVALID', `${name}=${value} is not a number between 0 and 1`, {
        hint: `set ${name} to a value such as 0.5`,
      });
    }
    return number;
  };
  const assign = <K extends keyof EnvironmentSettings>(key: K, value: EnvironmentSettings[K] | undefined) => {
    if (value !== undefined) settings[key] = value;
  };

  assign('stateDir', text('SWITCHBOARD_STATE_DIR'));
  assign('claudeExecutable', text('SWITCHBOARD_CLAUDE_PATH'));
  assign('ledger', flag('SWITCHBOARD_LEDGER'));
  assign('storeText', flag('SWITCHBOARD_STORE_TEXT'));
  assign('skills', text('SWITCHBOARD_ROUTE_SKILLS'));
  assign('provider', text('SWITCHBOARD_ROUTE_PROVIDER'));
  const mode = text('SWITCHBOARD_ROUTE_MODE');
  if (mode !== undefined) settings.mode = parseRouteMode(mode, 'SWITCHBOARD_ROUTE_MODE');
  assign('confidenceThreshold', fraction('SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD'));
  assign('marginThreshold', fraction('SWITCHBOARD_ROUTE_MARGIN_THRESHOLD'));
  assign('rulesFile', text('SWITCHBOARD_ROUTE_RULES_FILE'));
  assign(
    'examples',
    text('SWITCHBOARD_ROUTE_EXAMPLES')
      ?.split(',')
      .map((value) => value.trim()),
  );
  assign('strict', flag('SWITCHBOARD_ROUTE_STRICT'));
  assign('cache', flag('SWITCHBOARD_ROUTE_CACHE'));
  return settings;
}

/** Validates a routing mode given by a user, naming where it came from. */
export function parseRouteMode(value: string, source: string): RouteMode {
  if ((ROUTE_MODES as readonly string[]).includes(value)) return value as RouteMode;
  throw new SwitchboardError('INVALID_INPUT', `${source} "${value}" is not a routing mode`, {
    hint: `use one of: ${ROUTE_MODES.join(', ')}`,
  });
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration such as `90d`, `24h` or `30m` (the form `--since` and `ledger.retention` take); NaN otherwise. */
export function durationMs(value: string): number {
  const match = /^(\d+(?:\.\d+)?)([mhd])$/.exec(value.trim());
  return match === null ? Number.NaN : Number(match[1]) * (DURATION_UNITS[match[2] as string] as number);
}

type BreakerSettings = NonNullable<CallSettings['breaker']>;

/** `call.breaker` in milliseconds; `call.cooldown_seconds`, the earlier name of its half-open wait, too. */
function breakerSettings(call: NonNullable<ConfigFile['call']> | undefined): BreakerSettings {
  const breaker = call?.breaker ?? {};
  const halfOpenAfter = breaker.half_open_after_seconds ?? call?.cooldown_seconds;
  const entries: [keyof BreakerSettings, number | undefined][] = [
    ['failureRatio', breaker.failure_ratio],
    ['minimumRequests', breaker.minimum_requests],
    ['windowMs', seconds(breaker.window_seconds)],
    ['halfOpenAfterMs', seconds(halfOpenAfter)],
    ['maxHalfOpenAfterMs', seconds(breaker.max_half_open_after_seconds)],
    ['probes', breaker.probes],
  ];
  return Object.fromEntries(entries.filter(([, value]) => value !== undefined));
}

function seconds(value: number | undefined): number | undefined {
  return value === undefined ? undefined : value * 1000;
}
