import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oldNodeDirectory, PROVISIONED_NODE } from './helpers/old-node.js';

// bin/switchboard as a user runs it, under a system Node older than 22 (Debian's is 20): the CLI must
// still start, on the Node scripts/setup.sh provisioned, or say what to install.

const root = join(import.meta.dirname, '..');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const provisioned = PROVISIONED_NODE;

const oldNode = oldNodeDirectory();

/**
 * Runs the launcher with a bare environment, in a folder of its own: a `route` may otherwise start a
 * background server whose state folder would land in the checkout.
 */
function launch(launcher: string, path: string, args: string[]) {
  return spawnSync(launcher, args, {
    encoding: 'utf8',
    cwd: mkdtempSync(join(tmpdir(), 'switchboard-launcher-cwd-')),
    env: { PATH: path, HOME: tmpdir(), SWITCHBOARD_BACKGROUND_SERVE: '0' },
  });
}

/** bin/ and the built launch.js alone, as a checkout without .tools/ has them. */
function bareCheckout(): string {
  const copy = mkdtempSync(join(tmpdir(), 'switchboard-launcher-'));
  cpSync(join(root, 'bin'), join(copy, 'bin'), { recursive: true });
  mkdirSync(join(copy, 'dist/cli'), { recursive: true });
  cpSync(join(root, 'dist/cli/launch.js'), join(copy, 'dist/cli/launch.js'));
  return copy;
}

describe('bin/switchboard', () => {
  it.skipIf(oldNode === undefined || !existsSync(provisioned))(
    'runs the CLI on the provisioned Node when the one on PATH is older than 22, exit codes passed on',
    () => {
      const launcher = join(root, 'bin/switchboard');
      const shown = launch(launcher, `${oldNode}:/bin`, ['--version']);
      expect(shown.stdout.trim()).toBe(version);
      expect(shown.status).toBe(0);
      const failed = launch(launcher, `${oldNode}:/bin`, ['route', '--skills', '/no/such/folder', 'hello']);
      expect(failed.stderr).toMatch(/skills folder \/no\/such\/folder does not exist/);
      expect(failed.status).toBe(4);
    },
  );

  it.skipIf(oldNode === undefined || !existsSync(provisioned))(
    'reached through a symbolic link (npx, a bin folder), runs as one process on the provisioned Node',
    () => {
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-launcher-link-'));
      symlinkSync(join(root, 'bin/switchboard'), join(folder, 'switchboard'));
      const shown = launch(join(folder, 'switchboard'), `${oldNode}:/bin`, ['--version']);
      expect(shown.stdout.trim()).toBe(version);
      expect(shown.status).toBe(0);
    },
  );

  it.skipIf(oldNode === undefined || !existsSync(provisioned))(
    'launch.js started directly on an old Node starts no second Node: it names the launcher and exits 78',
    () => {
      const result = spawnSync(join(oldNode!, 'node'), [join(root, 'dist/cli/launch.js'), '--version'], {
        encoding: 'utf8',
      });
      expect(result.stderr).toMatch(
        /^switchboard: Node >= 22 is required \(found \d+\.[\d.]+\); run bin\/switchboard/,
      );
      expect(result.stderr.trim()).toMatch(new RegExp(`which uses ${provisioned}$`));
      expect(result.status).toBe(78);
    },
  );

  it.skipIf(oldNode === undefined)('without a Node >= 22 anywhere, says what to install and exits 78', () => {
    const checkout = bareCheckout();
    const result = launch(join(checkout, 'bin/switchboard'), `${oldNode}:/bin`, ['--version']);
    expect(result.stderr).toMatch(/^switchboard: Node >= 22 is required \(found \d+\.[\d.]+\); install it/);
    expect(result.status).toBe(78);
  });

  it('in a checkout never set up (a fresh clone), says to run scripts/setup.sh and exits 78, no stack trace', () => {
    const checkout = mkdtempSync(join(tmpdir(), 'switchboard-launcher-unbuilt-'));
    cpSync(join(root, 'bin'), join(checkout, 'bin'), { recursive: true });
    const result = launch(join(checkout, 'bin/switchboard'), process.env['PATH'] ?? '/usr/bin:/bin', [
      '--version',
    ]);
    expect(result.stderr.trim()).toBe(
      'switchboard: this checkout is not built (no dist/); run scripts/setup.sh once, or use scripts/switchboard, which sets it up',
    );
    expect(result.status).toBe(78);
  });

  it('without any node on PATH and none provisioned, says so and exits 78', () => {
    const checkout = bareCheckout();
    const result = launch(join(checkout, 'bin/switchboard'), '/nonexistent', ['--version']);
    expect(result.stderr.trim()).toBe(
      'switchboard: Node >= 22 is required (found none); install it, or run scripts/setup.sh in a checkout',
    );
    expect(result.status).toBe(78);
  });

  it.skipIf(!existsSync(provisioned))(
    "keeps Node's compile cache in the user's cache folder, and starts without one it cannot write",
    () => {
      const launcher = join(root, 'bin/switchboard');
      const cwd = mkdtempSync(join(tmpdir(), 'switchboard-launcher-cwd-'));
      const cache = mkdtempSync(join(tmpdir(), 'switchboard-launcher-cache-'));
      const run = (xdgCacheHome: string) =>
        spawnSync(launcher, ['--version'], {
          cwd,
          encoding: 'utf8',
          env: { PATH: '/usr/bin:/bin', HOME: cwd, XDG_CACHE_HOME: xdgCacheHome },
        });
      const cached = run(cache);
      expect(cached.stdout.trim()).toBe(version);
      expect(readdirSync(join(cache, 'switchboard/node-compile-cache')).length).toBeGreaterThan(0);
      // A cache folder under a regular file cannot be made: the command still runs, and says nothing.
      const blocker = join(cache, 'not-a-folder');
      writeFileSync(blocker, '');
      const uncached = run(blocker);
      expect(uncached).toMatchObject({ status: 0, stderr: '' });
      expect(uncached.stdout.trim()).toBe(version);
      // Nothing lands in the working directory (the home folder here, which XDG_CACHE_HOME overrides).
      expect(readdirSync(cwd)).toEqual([]);
    },
  );
});
