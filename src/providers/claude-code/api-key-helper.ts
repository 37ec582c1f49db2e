import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REMOVE_ON_PARENT_DEATH_VARIABLE } from './process-group.js';

/** An API key handed to Claude Code through its `apiKeyHelper` setting instead of the environment. */
export interface ApiKeyHelper {
  /** The command Claude Code runs to read the key (its stdout is the key). */
  command: string;
  /**
   * For the Claude Code process's environment: has its parent watch delete the key file if this process
   * dies without calling `dispose` (a SIGKILL), so no key is left behind in the temporary folder.
   */
  environment: Record<string, string>;
  /** Deletes the key file. */
  dispose(): void;
}

/**
 * Writes `apiKey` to a file only this user can read and returns the helper command that prints it.
 *
 * Why: Claude Code's Bash tool and every command it starts inherit its environment, so with
 * `ANTHROPIC_API_KEY` there an allowed `printenv` puts the key in the transcript and in the next API
 * request. Claude Code runs `apiKeyHelper` itself and sends the output as `x-api-key` (and as a bearer
 * token), so the key reaches the API while the agent's tools never see it in their environment. The
 * file is not secret from a determined command running as the same user; it only keeps the key out of
 * the environment that tools dump without meaning to.
 */
export function createApiKeyHelper(apiKey: string): ApiKeyHelper {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-key-'));
  const file = join(directory, 'api-key');
  writeFileSync(file, apiKey, { mode: 0o600 });
  return {
    command: `cat '${file.replaceAll("'", "'\\''")}'`,
    environment: { [REMOVE_ON_PARENT_DEATH_VARIABLE]: directory },
    dispose: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/**
 * For a call that lets Claude Code run tools: moves `ANTHROPIC_API_KEY` out of the options' environment
 * into an `apiKeyHelper`, for the reason `createApiKeyHelper` gives. Undefined when there is no such key.
 */
export function moveApiKeyToHelper(options: {
  env?: Record<string, string | undefined>;
  settings?: string | Record<string, unknown>;
}): ApiKeyHelper | undefined {
  const key = options.env?.['ANTHROPIC_API_KEY'];
  if (key === undefined || key === '' || typeof options.settings === 'string') return undefined;
  const { ANTHROPIC_API_KEY: _moved, ...rest } = options.env ?? {};
  const helper = createApiKeyHelper(key);
  options.env = { ...rest, ...helper.environment };
  options.settings = { ...options.settings, apiKeyHelper: helper.command };
  return helper;
}
