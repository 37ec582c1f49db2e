import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { WorkflowEventRecord, WorkflowRunResult } from '../src/workflows/api-types.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// Several `switchboard workflow gate` processes answering one parked gate at once: the first answer
// committed wins, the run continues with it, and every other answerer exits GATE_TAKEN (62) naming
// who answered what and when. Real processes on one database (SQLite file, or PostgreSQL in that pass).

const cli = resolve(import.meta.dirname, '../dist/cli/main.js');

const FLOW = `workflow:
  name: race
  entry_point: approve
agents:
  - name: approve
    type: human_gate
    prompt: Which one?
    options:
      - { label: A, value: a, route: done }
      - { label: B, value: b, route: done }
      - { label: C, value: c, route: done }
  - name: done
    type: set
    value: "{{ approve.output.selected }}"
output:
  chosen: "{{ done.output }}"
`;

/**
 * Preloaded into each answering process: loads the CLI's modules first, says it is ready, then waits
 * for the start signal, so the answers leave at (nearly) the same moment, not one process start apart.
 */
const BARRIER = `
import { existsSync, writeFileSync } from 'node:fs';
await import(${JSON.stringify(resolve(import.meta.dirname, '../dist/workflows/index.js'))});
await import(${JSON.stringify(resolve(import.meta.dirname, '../dist/workflows/engine-start.js'))});
writeFileSync(process.env.RACE_DIR + '/ready-' + process.pid, '');
while (!existsSync(process.env.RACE_DIR + '/go')) await new Promise((r) => setTimeout(r, 1));
`;

function answer(cwd: string, barrier: string, choice: string): Promise<CliRun & { choice: string }> {
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      [
        '--import',
        barrier,
        cli,
        'workflow',
        'gate',
        'race-1',
        '--choose',
        choice,
        '--by',
        `answerer-${choice}`,
      ],
      { cwd, env: { ...process.env, RACE_DIR: cwd }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolveRun({ status, stdout, stderr, choice });
      },
    );
  });
}

describe('workflow gate: answers racing for one gate', () => {
  it('exactly one of three simultaneous answers wins; the run continues with it; the others exit 62 naming it', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-gate-race-')));
    writeFileSync(join(cwd, 'flow.yaml'), FLOW);
    const barrier = join(cwd, 'barrier.mjs');
    writeFileSync(barrier, BARRIER);
    const env = { ...process.env };
    const parked = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'race-1'], { cwd, env });
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);

    const racing = ['a', 'b', 'c'].map((choice) => answer(cwd, barrier, choice));
    await waitFor(() => readdirSync(cwd).filter((name) => name.startsWith('ready-')).length === 3, {
      withinMs: 30_000,
      what: 'three answering processes ready',
    });
    writeFileSync(join(cwd, 'go'), '');
    const results = await Promise.all(racing);

    const winners = results.filter((result) => result.status === 0);
    expect(winners, JSON.stringify(results)).toHaveLength(1);
    const winner = winners[0]!.choice;
    const losers = results.filter((result) => result.status !== 0);
    for (const loser of losers) {
      expect(loser.status, loser.stderr).toBe(EXIT_CODES.GATE_TAKEN);
      expect(loser.stderr).not.toMatch(/\n\s+at /);
      expect(loser.stderr).toMatch(
        new RegExp(
          `gate "approve" of workflow run race-1 was already answered "${winner}" by answerer-${winner} at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z; "${loser.choice}" was not recorded`,
        ),
      );
    }

    // The run went on with the winning answer, and only that answer was recorded.
    const status = await runCli(['workflow', 'status', 'race-1', '--json'], { cwd, env });
    expect(JSON.parse(status.stdout) as WorkflowRunResult).toMatchObject({
      status: 'completed',
      output: { chosen: winner },
    });
    const logs = await runCli(['workflow', 'logs', 'race-1', '--json'], { cwd, env });
    const events = logs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as WorkflowEventRecord);
    expect(events.filter((event) => event.type === 'gate-answer').map((event) => event.data)).toEqual([
      { choice: winner, answeredBy: `answerer-${winner}`, visit: 0 },
    ]);
    expect(
      events.filter((event) => event.type === 'gate-taken').map((event) => event.data?.['choice']),
    ).toEqual([winner]);

    // After the run completed, an answer for the gate is refused too, naming the same winner.
    const late = await runCli(['workflow', 'gate', 'race-1', 'approve', '--choose', 'c', '--by', 'late'], {
      cwd,
      env,
    });
    expect(late.status, late.stderr).toBe(EXIT_CODES.GATE_TAKEN);
    expect(late.stderr).toContain(`was already answered "${winner}" by answerer-${winner}`);
  });
});
