import { existsSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { openLedger } from '../src/store/ledger.js';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { adminQuery } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import { engineOptions, setStep, stateDir, workflow } from './workflows-engine-support.js';

// Where the workflow store lives: always in the ledger's database. A URL given as a path or state
// folder once became a SQLite file under ./postgres:/ (password in its name), and the PostgreSQL pass
// silently ran the workflow store on SQLite. This file runs in both passes; the PostgreSQL half reads
// PostgreSQL itself to see the rows arrive there.

/** Set per test by the PostgreSQL pass's setup file (test/postgres-backend.ts). */
const databaseUrl = (): string => process.env.SWITCHBOARD_DATABASE_URL!;
const PASSWORD = `PLANTED-${Math.random().toString(36).slice(2)}`;
const URL_WITH_PASSWORD = `postgres://someone:${PASSWORD}@127.0.0.1:1/nowhere`;

function emptyFolder(): string {
  return realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-url-path-')));
}

describe('a URL is never a path', () => {
  it('--state-dir and SWITCHBOARD_STATE_DIR with a URL fail in one line naming the fix, and create no file', async () => {
    const cwd = emptyFolder();
    const flag = await runCli(['--state-dir', URL_WITH_PASSWORD, 'workflow', 'ls'], {
      cwd,
      env: { ...process.env },
    });
    expect(flag.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(flag.stderr.trim().split('\n')).toHaveLength(1);
    expect(flag.stderr).toMatch(
      /--state-dir postgres:\/\/someone@127\.0\.0\.1:1\/nowhere is a URL, not a path/,
    );
    expect(flag.stderr).toMatch(/SWITCHBOARD_DATABASE_URL/);
    const variable = await runCli(['workflow', 'ls'], {
      cwd,
      env: { ...process.env, SWITCHBOARD_STATE_DIR: URL_WITH_PASSWORD },
    });
    expect(variable.status).toBe(EXIT_CODES.CONFIG_INVALID);
    for (const output of [flag.stdout, flag.stderr, variable.stdout, variable.stderr]) {
      expect(output).not.toContain(PASSWORD);
    }
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('openLedger and WorkflowStore.open refuse a URL as a path or state folder', async () => {
    for (const target of [{ path: URL_WITH_PASSWORD }, { stateDir: URL_WITH_PASSWORD }]) {
      expect(() => openLedger(target)).toThrow(/is a URL, not a path/);
      await expect(WorkflowStore.open(target)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    for (const other of ['postgresql://h/db', 'mysql://h/db', 'file:///tmp/x.db']) {
      expect(() => openLedger({ path: other })).toThrow(/is a URL, not a path/);
    }
    expect(existsSync(resolve('postgres:'))).toBe(false);
    expect(existsSync(resolve('postgresql:'))).toBe(false);
  });
});

describe.skipIf(process.env.SWITCHBOARD_TEST_PG_PASS !== '1')(
  'the workflow store follows the ledger to PostgreSQL',
  () => {
    const definition = workflow(
      [setStep('a', { v: '"A"' }, [{ to: 'b' }]), setStep('b', { v: '"{{ a.output.v }}B"' })],
      { output: { v: '{{ b.output.v }}' } },
    );

    /** Rows of one run in each workflow table, read from PostgreSQL itself. */
    async function rowsInPostgres(runId: string): Promise<Record<string, number>> {
      const counts: Record<string, number> = {};
      for (const table of ['workflow_runs', 'workflow_steps', 'workflow_events']) {
        const column = table === 'workflow_runs' ? 'id' : 'run_id';
        const result = await adminQuery(
          `SELECT count(*)::int AS n FROM ${table} WHERE ${column} = '${runId}'`,
          databaseUrl(),
        );
        counts[table] = (result.rows[0] as { n: number }).n;
      }
      return counts;
    }

    it('with a ledger opened by another copy of the module (the built library), the run is written to PostgreSQL', async () => {
      const built = (await import('../dist/store/ledger.js')) as { openLedger: typeof openLedger };
      const ledger = built.openLedger({ url: databaseUrl() });
      const dir = stateDir();
      try {
        const result = await startWorkflowRun(definition, {
          ...engineOptions(dir, definition),
          ledger,
          runId: 'run-other-copy',
        });
        expect(result).toMatchObject({ status: 'completed', output: { v: 'AB' } });
      } finally {
        await ledger.close();
      }
      expect(await rowsInPostgres('run-other-copy')).toEqual({
        workflow_runs: 1,
        workflow_steps: 2,
        workflow_events: expect.any(Number) as number,
      });
      expect(readdirSync(dir)).toEqual([]);
      expect(existsSync(resolve('postgres:'))).toBe(false);
    });

    it('the CLI writes its run to PostgreSQL, and no SQLite file appears', async () => {
      const cwd = emptyFolder();
      writeFileSync(
        join(cwd, 'two.yaml'),
        `workflow:\n  name: two\n  entry_point: a\nagents:\n  - name: a\n    type: set\n    value: "A"\n    routes:\n      - to: b\n  - name: b\n    type: set\n    value: "{{ a.output }}B"\noutput:\n  v: "{{ b.output }}"\n`,
      );
      const run = await runCli(['workflow', 'run', 'two.yaml', '--json'], { cwd, env: { ...process.env } });
      expect(run.status).toBe(0);
      const { id } = JSON.parse(run.stdout) as { id: string };
      expect(await rowsInPostgres(id)).toMatchObject({ workflow_runs: 1, workflow_steps: 2 });
      expect(readdirSync(cwd).sort()).toEqual(['two.yaml']);
    });
  },
);
