import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const built = join(import.meta.dirname, '../../../dist/providers/claude-code/claude-code-provider.js');

/** Every module URL a fresh Node resolves while it imports the built provider and creates one. */
function resolvedWhileCreating(options: string): string[] {
  const script = [
    "import { registerHooks } from 'node:module';",
    'const seen = [];',
    'registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });',
    `const { createClaudeCodeProvider } = await import(${JSON.stringify(pathToFileURL(built).href)});`,
    `createClaudeCodeProvider(${options});`,
    'process.stdout.write(JSON.stringify(seen));',
  ].join('\n');
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(output) as string[];
}

describe('the Agent SDK is loaded at first use', () => {
  it('is not loaded by importing the Claude Code provider and creating one, with or without a pool', () => {
    for (const options of ['{}', "{ pool: { size: 2, model: 'claude-haiku-4-5' } }"]) {
      const resolved = resolvedWhileCreating(options);
      expect(resolved.some((url) => url.endsWith('/claude-code/warm-pool.js'))).toBe(true);
      expect(resolved.filter((url) => url.includes('claude-agent-sdk'))).toEqual([]);
    }
  });
});
