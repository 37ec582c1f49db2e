import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Claude Code's configuration folder for an environment: `CLAUDE_CONFIG_DIR`, else `~/.claude`. In
 * core, not with the provider: the prompt hook reads it and must load no provider module.
 */
export function claudeConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env['CLAUDE_CONFIG_DIR']?.trim();
  return chosen === undefined || chosen === '' ? join(env['HOME'] ?? homedir(), '.claude') : resolve(chosen);
}
