import { SwitchboardError } from '../core/errors.js';
import { registerSecret, SECRET_VARIABLE_NAME } from '../core/secrets.js';

/** How Claude Code reaches an MCP server: a program it starts (`stdio`), or a URL. */
export const MCP_SERVER_TYPES = ['stdio', 'http', 'sse'] as const;
export type McpServerType = (typeof MCP_SERVER_TYPES)[number];

/**
 * One MCP server an agent task (`mcp_servers:`) or a workflow (`runtime.mcp_servers:`) declares: the keys
 * of Claude Code's MCP config, plus the tools the agent may use. The same shape, checked by
 * `mcpServerProblem`, in both files.
 */
export interface McpServerEntry {
  /** @default 'stdio' */
  type: McpServerType;
  /** The program that serves MCP over stdio (type `stdio`). */
  command?: string;
  args: string[];
  /** Added to the environment the program gets. */
  env: Record<string, string>;
  /** The server's address (types `http` and `sse`). */
  url?: string;
  headers: Record<string, string>;
  /** The server's tools the agent may use, by their own names; `['*']` for all of them. */
  tools: string[];
}

/** What is wrong with one server entry: the key (relative to the entry; '' for its name), why, the fix. */
export interface McpServerProblem {
  field: string;
  message: string;
  hint: string;
}

const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
/** MCP's tool name characters. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const CREDENTIAL_HEADER = /^(?:authorization|proxy-authorization|cookie)$/i;
/** What may stand beside `${VAR}` in a credential: an auth scheme (`Bearer ${TOKEN}`). */
const AUTH_SCHEME = /^(?:bearer|basic|token|bot)?$/i;

/** The fields of an entry as a schema gives them (before defaults are applied in every case). */
export interface McpServerFields {
  type: McpServerType;
  command?: string | null | undefined;
  args?: string[] | undefined;
  env?: Record<string, string> | undefined;
  url?: string | null | undefined;
  headers?: Record<string, string> | undefined;
  tools?: string[] | null | undefined;
}

/**
 * The first problem of one server entry: a name Claude Code cannot use in `mcp__<server>__<tool>`, a
 * missing `command` or `url`, keys of the other transport, an empty or misspelt tool list.
 */
export function mcpServerProblem(name: string, server: McpServerFields): McpServerProblem | undefined {
  if (!SERVER_NAME.test(name) || name.includes('__')) {
    return {
      field: '',
      message: `the MCP server name "${name}" may hold only letters, digits, "-" and "_" (not "__")`,
      hint: 'rename it: Claude Code names its tools mcp__<server>__<tool>',
    };
  }
  return transportProblem(name, server) ?? toolsProblem(name, server.tools);
}

function transportProblem(name: string, server: McpServerFields): McpServerProblem | undefined {
  const given = (value: unknown): boolean =>
    value !== undefined &&
    value !== null &&
    value !== '' &&
    !(typeof value === 'object' && Object.keys(value).length === 0);
  if (server.type === 'stdio') {
    if (!given(server.command)) {
      return {
        field: 'command',
        message: `the stdio MCP server "${name}" needs "command"`,
        hint: 'add command: (the program that serves MCP over stdio), or give type: http with url:',
      };
    }
    const stray = (['url', 'headers'] as const).find((key) => given(server[key]));
    if (stray !== undefined) {
      return {
        field: stray,
        message: `"${stray}" is for type: http or sse, and the MCP server "${name}" is a stdio server`,
        hint: `remove ${stray}:, or give type: http`,
      };
    }
    return undefined;
  }
  if (!given(server.url)) {
    return {
      field: 'url',
      message: `the ${server.type} MCP server "${name}" needs "url"`,
      hint: 'add url: http://…',
    };
  }
  if (!(server.url ?? '').includes('${') && !/^https?:\/\/[^\s]+$/i.test(server.url ?? '')) {
    return {
      field: 'url',
      message: `the MCP server "${name}" has url "${server.url ?? ''}", which is not an http:// or https:// address`,
      hint: 'write the server address, e.g. url: http://127.0.0.1:3000/mcp',
    };
  }
  const stray = (['command', 'args', 'env'] as const).find((key) => given(server[key]));
  if (stray === undefined) return undefined;
  return {
    field: stray,
    message: `"${stray}" is for type: stdio, and the MCP server "${name}" is an ${server.type} server`,
    hint: `remove ${stray}:, or leave type: out for a server Claude Code starts`,
  };
}

function toolsProblem(name: string, tools: string[] | null | undefined): McpServerProblem | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (tools.length === 0) {
    return {
      field: 'tools',
      message: `the MCP server "${name}" lists no tools`,
      hint: 'list the tools the agent may use, or leave tools: out to allow all of them',
    };
  }
  for (const [index, tool] of tools.entries()) {
    if (tool === '*') continue;
    if (tool.startsWith('mcp__')) {
      return {
        field: `tools.${index}`,
        message: `"${tool}" is Claude Code's name for the tool; list the server's own name`,
        hint: `write ${tool.split('__').at(-1) ?? tool}`,
      };
    }
    if (!TOOL_NAME.test(tool)) {
      return {
        field: `tools.${index}`,
        message: `"${tool}" is not an MCP tool name (letters, digits, "_", "-", ".")`,
        hint: `list the tool names the server "${name}" offers`,
      };
    }
  }
  return undefined;
}

/**
 * A credential written out in a task file's server `env` or `headers` (keys named like secrets, and
 * `Authorization`/`Cookie` headers). A task is recorded with its run (the ledger, a worker's queue), so a
 * credential must come from the environment as `${VAR}`, expanded only when Claude Code starts.
 */
export function literalCredential(name: string, server: McpServerFields): McpServerProblem | undefined {
  const fields: Array<[string, Record<string, string> | undefined]> = [
    ['env', server.env],
    ['headers', server.headers],
  ];
  for (const [field, values] of fields) {
    for (const [key, value] of Object.entries(values ?? {})) {
      const credential =
        SECRET_VARIABLE_NAME.test(key) || (field === 'headers' && CREDENTIAL_HEADER.test(key));
      if (!credential || !holdsLiteral(value)) continue;
      const variable = field === 'env' ? key : 'TOKEN';
      return {
        field: `${field}.${key}`,
        message: `the MCP server "${name}" has its credential ${key} written in the task, which is recorded with the run`,
        hint: `write ${field === 'env' ? '' : 'Bearer '}\${${variable}} and set ${variable} in the environment the agent runs in`,
      };
    }
  }
  return undefined;
}

function holdsLiteral(value: string): boolean {
  if (!new RegExp(ENV_REFERENCE.source).test(value)) return value !== '';
  return !AUTH_SCHEME.test(value.replace(ENV_REFERENCE, '').trim());
}

/** Servers in Claude Code's MCP config shape, and the `allowedTools` entries their tool lists make. */
export interface ClaudeMcpConfig {
  servers: Record<string, Record<string, unknown>>;
  /** `mcp__<server>` for a server whose tools are all allowed, else `mcp__<server>__<tool>` per tool. */
  tools: string[];
}

/**
 * Declared servers as Claude Code takes them: `${VAR}` and `${VAR:-default}` expanded from `env` (so a
 * recorded task keeps only the reference), empty fields left out, the `tools` list turned into allowed
 * tool entries. The values of credential-named `env` keys and headers are registered as secrets, so no
 * transcript, log or record shows them.
 *
 * @throws SwitchboardError `TASK_INVALID` when a referenced variable is not set and has no default.
 */
export function claudeMcpConfig(
  servers: Readonly<Record<string, McpServerEntry>>,
  env: NodeJS.ProcessEnv = process.env,
): ClaudeMcpConfig {
  const configs: Record<string, Record<string, unknown>> = {};
  const tools: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    const expand = (value: string, field: string): string => expandReferences(value, env, `${name}.${field}`);
    const config: Record<string, unknown> = { type: server.type };
    if (server.type === 'stdio') {
      config['command'] = expand(server.command ?? '', 'command');
      if (server.args.length > 0)
        config['args'] = server.args.map((arg, index) => expand(arg, `args.${index}`));
      const environment = expandMap(server.env, (value, key) => expand(value, `env.${key}`));
      if (environment !== undefined) config['env'] = environment;
    } else {
      config['url'] = expand(server.url ?? '', 'url');
      const headers = expandMap(server.headers, (value, key) => expand(value, `headers.${key}`));
      if (headers !== undefined) config['headers'] = headers;
    }
    registerCredentials(config);
    configs[name] = config;
    const listed = server.tools.length === 0 ? ['*'] : server.tools;
    if (listed.includes('*')) tools.push(`mcp__${name}`);
    else tools.push(...listed.map((tool) => `mcp__${name}__${tool}`));
  }
  return { servers: configs, tools };
}

function expandMap(
  values: Readonly<Record<string, string>>,
  expand: (value: string, key: string) => string,
): Record<string, string> | undefined {
  const entries = Object.entries(values);
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([key, value]) => [key, expand(value, key)]));
}

function expandReferences(value: string, env: NodeJS.ProcessEnv, place: string): string {
  return value.replace(ENV_REFERENCE, (_match, variable: string, fallback: string | undefined) => {
    const found = env[variable];
    if (found !== undefined) return found;
    if (fallback !== undefined) return fallback;
    throw new SwitchboardError(
      'TASK_INVALID',
      `mcp_servers.${place}: environment variable ${variable} is not set`,
      {
        hint: `set ${variable} where the agent runs, or write \${${variable}:-default}`,
      },
    );
  });
}

function registerCredentials(config: Record<string, unknown>): void {
  const env = (config['env'] ?? {}) as Record<string, string>;
  const headers = (config['headers'] ?? {}) as Record<string, string>;
  for (const [key, value] of Object.entries(env)) if (SECRET_VARIABLE_NAME.test(key)) registerSecret(value);
  for (const [key, value] of Object.entries(headers)) {
    if (!SECRET_VARIABLE_NAME.test(key) && !CREDENTIAL_HEADER.test(key)) continue;
    // `Bearer <token>` registers the token alone too (registerSecret splits at spaces).
    registerSecret(value);
  }
}
