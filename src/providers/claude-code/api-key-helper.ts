import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REMOVE_ON_PARENT_DEATH_VARIABLE } from './process-group.js';

/** An API key handed to Claude Code through its `apiKeyHelper` setting instead of the environment. */
export interface ApiKeyHelper {
  /** The command Claude Code runs to read the key (its stdout is the key). */
  command: string;
  /** The private folder (mode 0700) holding the key file; `dispose` removes it with all it holds. */
  directory: string;
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
 * Why: Claude Code's Bash tool and every command it starts inherit its environment, so a credential
 * there ends up in the transcript of an allowed `printenv`. Claude Code runs `apiKeyHelper` itself
 * and sends the output as `x-api-key`. Only ever given the per-call token of a key forwarder (see
 * `startConfinement`), never a real key: the file lies in the temporary folder, which Claude Code's
 * sandbox hides from the commands it runs.
 */
export function createApiKeyHelper(apiKey: string): ApiKeyHelper {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-key-'));
  const file = join(directory, 'api-key');
  writeFileSync(file, apiKey, { mode: 0o600 });
  return {
    command: `cat '${file.replaceAll("'", "'\\''")}'`,
    directory,
    environment: { [REMOVE_ON_PARENT_DEATH_VARIABLE]: directory },
    dispose: () => rmSync(directory, { recursive: true, force: true }),
  };
}
