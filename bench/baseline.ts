// Runs a bench script against another revision's src/ so its figures can be printed beside this
// tree's in the same run (same machine, same load). The revision's src/ is extracted with
// `git archive` into a temporary folder, beside a copy of this tree's bench/ (the same measurement
// code) and a symlink to node_modules; the bench then runs there in a child process with `--json`.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedDirectory } from './source-hooks.ts';

/**
 * The last commit before the routing model of issue 16 (MODEL_VERSION 'tfidf-softmax-3'): the
 * baseline both routing benches print unless `--baseline REV` names another or `--no-baseline`.
 */
export const DEFAULT_BASELINE = '4918dfa';

const repository = fileURLToPath(new URL('..', import.meta.url));

/** The revision named by `--baseline REV`, the default one, or undefined with `--no-baseline` or in a child run. */
export function baselineRevision(argv: readonly string[]): string | undefined {
  if (argv.includes('--no-baseline') || argv.includes('--json')) return undefined;
  const at = argv.indexOf('--baseline');
  return at >= 0 ? argv[at + 1] : DEFAULT_BASELINE;
}

/**
 * Runs `bench/<script>` with `--json` and `extraArguments` against `revision`'s src/ and returns the
 * last line it printed, parsed; or a string saying why it could not.
 */
export function runAtRevision<T>(
  revision: string,
  script: string,
  extraArguments: readonly string[] = [],
): T | string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-baseline-'));
  try {
    const archive = spawnSync('sh', ['-c', `git archive "$0" src | tar -x -C "$1"`, revision, folder], {
      cwd: repository,
      encoding: 'utf8',
    });
    if (archive.status !== 0) return `baseline ${revision}: git archive failed: ${archive.stderr.trim()}`;
    cpSync(join(repository, 'bench'), join(folder, 'bench'), { recursive: true });
    symlinkSync(join(repository, 'node_modules'), join(folder, 'node_modules'));
    cpSync(join(repository, 'package.json'), join(folder, 'package.json'));
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, join(folder, 'bench', script), '--json', ...extraArguments],
      {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, SWITCHBOARD_SHARED_DIR: sharedDirectory },
      },
    );
    if (child.status !== 0)
      return `baseline ${revision}: ${script} failed: ${child.stderr.trim().slice(0, 400)}`;
    const last = child.stdout.trim().split('\n').at(-1) ?? '';
    try {
      return JSON.parse(last) as T;
    } catch {
      return `baseline ${revision}: ${script} printed no JSON result`;
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
