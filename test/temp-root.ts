import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every temporary folder the tests make (theirs, the CLI's, Claude Code's) goes under one root that
 * is removed when the run ends, so a run, even one whose tests fail midway, leaves /tmp as it was.
 * HOME is an empty folder there too: Claude Code runs its Bash tool through the user's shell set-up
 * (~/.bashrc), which on some machines runs tools (pyenv rehash) that a test killing an agent's process
 * tree can leave holding a lock, stalling every later Bash call. Workers start after global setup and
 * inherit both. No command a test runs starts a background server (cli/background-serve.ts) unless the
 * test asks for one: a server outliving its test would hold the run's folder open.
 */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'switchboard-test-run-'));
  const home = join(root, 'home');
  mkdirSync(home);
  process.env.TMPDIR = root;
  process.env.HOME = home;
  process.env.SWITCHBOARD_BACKGROUND_SERVE = '0';
  return () => rmSync(root, { recursive: true, force: true });
}
