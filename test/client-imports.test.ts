import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// `switchboard call --server` and `route --server` must start fast: their command modules load no
// provider SDK, no Agent SDK and no router until they run in process. Checked on the built dist by
// recording every module a fresh Node resolves while importing the command module.

const dist = join(import.meta.dirname, '../dist/cli');

function modulesLoadedBy(file: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
    await import(${JSON.stringify(join(dist, file))});
    console.log(JSON.stringify(seen));
  `;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(output) as string[];
}

const HEAVY =
  /@anthropic-ai|node_modules\/openai|@google\/genai|prom-client|better-sqlite3|dist\/(route|providers|invoke|store)\//;

describe('the --server client', () => {
  it.each(['call.js', 'route.js', 'server-client.js'])(
    '%s loads no provider SDK, router or ledger',
    (file) => {
      const loaded = modulesLoadedBy(file);
      expect(loaded.some((url) => url.endsWith(`/dist/cli/${file}`))).toBe(true);
      expect(loaded.filter((url) => HEAVY.test(url))).toEqual([]);
    },
  );
});
