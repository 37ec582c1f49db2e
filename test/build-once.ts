import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const stamp = join(root, 'dist/.build-stamp');
const entryPoint = join(root, 'dist/cli/main.js');

const uiSource = join(root, 'src/ui');
const uiEntry = join(root, 'dist/ui/index.html');

function newestSource(directory: string, skip?: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (path === skip) continue;
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path, skip) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * When dist was last built: by this setup (the stamp), or by `npm run build`, whose tsc rewrites every
 * output file, the entry point included. CI runs `npm run build` just before the tests; counting that
 * build spares the tests a second one.
 */
function builtAt(): number {
  return Math.max(...[stamp, entryPoint].map((file) => (existsSync(file) ? statSync(file).mtimeMs : 0)));
}

/**
 * CLI tests run the built CLI, and the UI tests the built web app; build each first when its sources are
 * newer than its last build (the web app's Vite build rewrites dist/ui/index.html).
 */
export default function setup(): void {
  if (builtAt() < newestSource(join(root, 'src'), uiSource)) {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: root,
        stdio: 'inherit',
      },
    );
    writeFileSync(stamp, '');
  }
  const uiBuiltAt = existsSync(uiEntry) ? statSync(uiEntry).mtimeMs : 0;
  if (existsSync(uiSource) && uiBuiltAt < newestSource(uiSource)) {
    execFileSync(
      process.execPath,
      [
        join(root, 'node_modules/vite/bin/vite.js'),
        'build',
        '--config',
        'src/ui/vite.config.ts',
        '--logLevel',
        'warn',
      ],
      { cwd: root, stdio: 'inherit' },
    );
  }
}
