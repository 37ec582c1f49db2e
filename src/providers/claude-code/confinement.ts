import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { agentEnvironment, claudeCodeVariables } from '../../agents/environment.js';
import { processJail, type JailedSpawn } from '../../confinement/process-jail.js';
import { sandboxSettings, type AgentSandboxSettings } from '../../confinement/sandbox.js';
import { createApiKeyHelper, type ApiKeyHelper } from './api-key-helper.js';
import { claudeEnvironment } from './environment.js';
import { startKeyForwarder, type ForwardedUsage, type KeyForwarder } from './key-forwarder.js';

/** How to start a Claude Code process whose tools run code the model chose. */
export interface ConfinementOptions {
  /** The folder its Bash commands and file tools are confined to. */
  cwd: string;
  /** Where the API is (else `ANTHROPIC_BASE_URL`, else Anthropic's): the forwarder's upstream. */
  baseUrl?: string | undefined;
  /** The key the forwarder adds (else `ANTHROPIC_API_KEY`, else `ANTHROPIC_AUTH_TOKEN` as a bearer). */
  apiKey?: string | undefined;
  /**
   * Claude Code's configuration folder. When none is given and the forwarder runs, a private one is
   * made beside the forwarder's token and removed by `close`, so nothing of the user's `~/.claude`
   * (credentials, settings, other sessions) is loaded, and nothing of this call stays there.
   */
  configDir?: string | undefined;
  /** Keep Claude Code's own configuration folder when `configDir` is not given (a session to resume). */
  sharedConfigDir?: boolean | undefined;
  /** The caller's own environment additions; secret-like names are dropped from them like the parent's. */
  env?: Record<string, string> | undefined;
  /** Variables set as given, after filtering (a process tag). */
  extraEnv?: Record<string, string> | undefined;
  /** Names kept although they look like secrets (see `agentEnvironment`). */
  passEnvironment?: readonly string[] | undefined;
  readableDirectories?: readonly string[] | undefined;
  hiddenDirectories?: readonly string[] | undefined;
  /** The repository's git folder the sandbox lets Bash read (see `sandboxSettings`). */
  gitDirectory?: string | undefined;
  /**
   * Whether Claude Code runs with stdio MCP servers: they are the user's own programs, started by Claude
   * Code, and would run in its jail, away from the files they read and write; so then there is no jail.
   */
  stdioMcpServers?: boolean | undefined;
  /** Claude Code's own API retries (`CLAUDE_CODE_MAX_RETRIES`). @default 0 */
  maxRetries?: number | undefined;
  /** Usage of each response passing the forwarder (see `KeyForwarderOptions.onUsage`). */
  onUsage?: ((usage: ForwardedUsage) => void) | undefined;
}

/** What a confined Claude Code process is started with; `close` ends the forwarder and removes its files. */
export interface Confinement {
  /** The process's environment: no credential, secret-like names stripped. */
  env: Record<string, string>;
  /** Claude Code settings to merge: the forwarder token's `apiKeyHelper` and the `sandbox` block. */
  settings: { apiKeyHelper?: string; sandbox?: AgentSandboxSettings };
  /** Whether Bash runs in Claude Code's sandbox, and why not (see `sandboxSettings`). */
  sandbox: { enabled: boolean; reason?: string };
  /**
   * Puts the Claude Code process itself in its mount namespace (see `processJail`): what the SDK would
   * spawn, as bubblewrap spawns it. The identity when the jail is off or unavailable.
   */
  jail(spawn: JailedSpawn): JailedSpawn;
  /**
   * Credentials left in the process's environment, where its Bash can read them: a subscription login
   * (`CLAUDE_CODE_OAUTH_TOKEN`) when no key of ours put a forwarder in front of Claude Code.
   */
  exposedCredentials: string[];
  close(): Promise<void>;
}

/**
 * Starts what a Claude Code process with tools needs so that its tools cannot reach the API key: a
 * key forwarder on 127.0.0.1 holding the key (Claude Code holds only a token worthless elsewhere,
 * through `apiKeyHelper`), an environment without credentials, its own configuration folder, and
 * Claude Code's sandbox settings confining Bash to `cwd`. Agent runs and the claude provider's calls
 * with tools both start Claude Code this way.
 */
export async function startConfinement(options: ConfinementOptions): Promise<Confinement> {
  const parent: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  const forwarder = await forwarderFor(options, parent);
  let keyHelper: ApiKeyHelper | undefined;
  try {
    // Claude Code holds only the forwarder's token: worthless anywhere but this call's forwarder.
    keyHelper = forwarder === undefined ? undefined : createApiKeyHelper(forwarder.token);
    const configDir = options.configDir ?? privateConfigDir(keyHelper, options.sharedConfigDir === true);
    const variables = claudeCodeVariables(parent);
    // Behind the forwarder Claude Code needs no credential of its own (and its tools, which inherit its
    // environment, must find none): neither the gateway's bearer token nor a subscription login.
    if (forwarder !== undefined) {
      delete variables['ANTHROPIC_AUTH_TOKEN'];
      delete variables['CLAUDE_CODE_OAUTH_TOKEN'];
    }
    const env = claudeEnvironment(
      {
        baseUrl: forwarder?.url ?? options.baseUrl,
        configDir,
        maxRetries: options.maxRetries,
        env: { ...variables, ...keyHelper?.environment, ...options.extraEnv },
      },
      agentEnvironment(parent, options.passEnvironment),
    );
    const sandbox = sandboxSettings(options);
    const helper = keyHelper;
    const jail =
      options.stdioMcpServers === true
        ? { wrap: undefined }
        : processJail({
            cwd: options.cwd,
            readable: [
              ...(options.gitDirectory === undefined ? [] : [options.gitDirectory]),
              ...(options.readableDirectories ?? []),
              ...(helper === undefined ? [] : [helper.directory]),
            ],
            hidden: options.hiddenDirectories,
            keepLogin: forwarder === undefined,
          });
    // Inside the jail the kernel refuses Bash's sandbox a fresh /proc (the jail's own has bubblewrap's
    // read-only covers, so it is not "fully visible"): Bash then shares the jail's /proc, which shows
    // only the jail's processes (Claude Code's own, whose environment holds no credential), never the
    // runner's. Measured against Claude Code 2.1.330 and bubblewrap 0.8.0.
    if (jail.wrap !== undefined && sandbox.settings !== undefined)
      sandbox.settings.enableWeakerNestedSandbox = true;
    return {
      env,
      settings: {
        ...(helper === undefined ? {} : { apiKeyHelper: helper.command }),
        ...(sandbox.settings === undefined ? {} : { sandbox: sandbox.settings }),
      },
      sandbox: sandbox.note,
      jail: (spawn) => jail.wrap?.(spawn) ?? spawn,
      exposedCredentials: forwarder === undefined ? exposed(variables) : [],
      close: async () => {
        helper?.dispose();
        await forwarder?.close();
      },
    };
  } catch (error) {
    keyHelper?.dispose();
    await forwarder?.close();
    throw error;
  }
}

/** The login Claude Code reads from its environment and, without a forwarder, hands on to its tools. */
function exposed(variables: Record<string, string>): string[] {
  const value = variables['CLAUDE_CODE_OAUTH_TOKEN'];
  return value === undefined || value === '' ? [] : ['CLAUDE_CODE_OAUTH_TOKEN'];
}

/** A configuration folder inside the token's private folder, removed with it (also if this process dies). */
function privateConfigDir(keyHelper: ApiKeyHelper | undefined, shared: boolean): string | undefined {
  // Without a forwarder Claude Code uses its own login, which lives in its own configuration folder.
  if (keyHelper === undefined || shared) return undefined;
  const directory = join(keyHelper.directory, 'config');
  mkdirSync(directory, { mode: 0o700 });
  return directory;
}

/**
 * The forwarder, holding the API key (given, else `ANTHROPIC_API_KEY`, else `ANTHROPIC_AUTH_TOKEN` as
 * a bearer token) and forwarding to the given base URL (else `ANTHROPIC_BASE_URL`, else Anthropic's).
 * None on Bedrock or Vertex, or when Claude Code uses its own login: then there is no key of ours to
 * keep from it.
 */
async function forwarderFor(
  options: ConfinementOptions,
  parent: NodeJS.ProcessEnv,
): Promise<KeyForwarder | undefined> {
  if (parent['CLAUDE_CODE_USE_BEDROCK'] === '1' || parent['CLAUDE_CODE_USE_VERTEX'] === '1') return undefined;
  const apiKey = options.apiKey ?? parent['ANTHROPIC_API_KEY'];
  const bearer = parent['ANTHROPIC_AUTH_TOKEN'];
  const credential =
    apiKey !== undefined && apiKey !== ''
      ? ({ kind: 'api-key', value: apiKey } as const)
      : bearer !== undefined && bearer !== ''
        ? ({ kind: 'bearer', value: bearer } as const)
        : undefined;
  if (credential === undefined) return undefined;
  const upstream = options.baseUrl ?? parent['ANTHROPIC_BASE_URL'];
  return await startKeyForwarder({
    upstream: upstream === '' ? undefined : upstream,
    credential,
    ...(options.onUsage === undefined ? {} : { onUsage: options.onUsage }),
  });
}

export { secretPaths } from '../../confinement/file-access.js';
