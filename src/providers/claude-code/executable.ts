import { accessSync, constants, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { SwitchboardError } from '../../core/errors.js';

const INSTALL_HINT =
  'install it with `npm install @anthropic-ai/claude-agent-sdk` (it ships the binary) or `npm install -g @anthropic-ai/claude-code`, or pass the path of your own claude';

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the Claude Code binary: an explicit path (a user's own `claude`), else the native binary the
 * Agent SDK ships in its per-platform package, else `claude` on PATH.
 */
export function resolveClaudeExecutable(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined) {
    if (isExecutable(explicit)) return explicit;
    throw new SwitchboardError(
      'PROVIDER_UNAVAILABLE',
      `Claude Code executable ${explicit} ${existsSync(explicit) ? 'is not executable' : 'does not exist'}`,
      { hint: INSTALL_HINT, provider: 'claude' },
    );
  }
  const require = createRequire(import.meta.url);
  const platform = `${process.platform}-${process.arch}`;
  for (const name of [
    `@anthropic-ai/claude-agent-sdk-${platform}`,
    `@anthropic-ai/claude-agent-sdk-${platform}-musl`,
  ]) {
    try {
      const candidate = join(
        dirname(require.resolve(`${name}/package.json`)),
        process.platform === 'win32' ? 'claude.exe' : 'claude',
      );
      if (isExecutable(candidate)) return candidate;
    } catch {
      // Not installed for this platform; try the next place.
    }
  }
  for (const directory of (env['PATH'] ?? '').split(delimiter)) {
    const candidate = join(directory, 'claude');
    if (directory !== '' && isExecutable(candidate)) return candidate;
  }
  throw new SwitchboardError('PROVIDER_UNAVAILABLE', 'the Claude Code binary was not found', {
    hint: INSTALL_HINT,
    provider: 'claude',
  });
}
