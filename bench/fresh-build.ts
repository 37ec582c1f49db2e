import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');

/**
 * Exits with one line when `built` (a file under dist/) is missing or older than the newest source
 * file: a bench that runs the built CLI or library must not measure a stale build. `why` says what runs
 * it, e.g. "the workers are the built CLI".
 */
export function assertFreshBuild(built: string, why: string): void {
  if (!existsSync(built)) {
    console.error(`dist/ is missing: run \`npm run build\` first (${why})`);
    process.exit(1);
  }
  const builtAt = statSync(built).mtimeMs;
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return newest(path);
        return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? statSync(path).mtimeMs : 0;
      }),
    );
  if (newest(join(repo, 'src')) > builtAt) {
    console.error(`dist/ is older than src/: run \`npm run build\` first (${why})`);
    process.exit(1);
  }
}
