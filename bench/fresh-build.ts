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

/**
 * `[runs] [--baseline DIR]` from the command line: the number of runs (`fallback` when none is given)
 * and the other checkout to measure beside this one, which must be built (exits with one line if not).
 */
export function runsAndBaseline(fallback: number): { runs: number; baselineRoot: string | undefined } {
  const baselineAt = process.argv.indexOf('--baseline');
  const baselineRoot = baselineAt === -1 ? undefined : resolve(process.argv[baselineAt + 1] ?? '.');
  if (baselineRoot !== undefined && !existsSync(join(baselineRoot, 'dist/cli/launch.js'))) {
    console.error(
      `--baseline ${baselineRoot}: no dist/cli/launch.js there; run \`npm run build\` in it first`,
    );
    process.exit(1);
  }
  const runs = Number(
    process.argv.slice(2).find((arg, index) => /^\d+$/.test(arg) && index + 2 !== baselineAt + 1) ?? fallback,
  );
  return { runs, baselineRoot };
}
