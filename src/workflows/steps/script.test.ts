import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resetSecrets } from '../../core/secrets.js';
import { waitForProcessesGone } from '../../providers/claude-code/process-group.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { executeScriptStep } from './script.js';
import { simpleStepContext, type SimpleContextOptions } from '../../../test/helpers/step-context.js';
import type { OutputField, ScriptStep } from '../model.js';

function script(fields: Partial<ScriptStep>): ScriptStep {
  return { name: 'run', type: 'script', command: 'sh', args: [], env: {}, routes: [], input: [], ...fields };
}

function shell(code: string, fields: Partial<ScriptStep> = {}): ScriptStep {
  return script({ command: 'sh', args: ['-c', code], ...fields });
}

async function run(step: ScriptStep, options: SimpleContextOptions = {}) {
  return executeScriptStep(simpleStepContext(step, options).context);
}

function field(type: OutputField['type'], extra: Partial<OutputField> = {}): OutputField {
  return { type, required: true, nullable: false, ...extra };
}

describe('script steps', () => {
  afterEach(() => {
    delete process.env['SWB_SCRIPT_TEST_API_KEY'];
    resetSecrets();
  });

  it('captures stdout, stderr and the exit code; a non-zero exit is an output, not a failure', async () => {
    const outcome = await run(shell('echo out; echo err >&2; exit 3'));
    expect(outcome.status).toBe('completed');
    expect(outcome.output).toEqual({ stdout: 'out\n', stderr: 'err\n', exit_code: 3 });
  });

  it('keeps what a quick script printed while the process-start event was still being written', async () => {
    // On PostgreSQL that write is a round trip; a script printing its JSON at once must not lose it.
    const marker = join(mkdtempSync(join(tmpdir(), 'switchboard-quick-')), 'printed');
    const { context } = simpleStepContext(shell(`printf '{"loud": "HI"}'; touch '${marker}'`));
    const emit = context.emit;
    context.emit = async (event) => {
      if (event.type === 'process-start') await waitFor(() => existsSync(marker));
      await emit(event);
    };
    const outcome = await executeScriptStep(context);
    expect(outcome.status).toBe('completed');
    expect(outcome.output).toMatchObject({ loud: 'HI', exit_code: 0 });
  });

  it('renders command, args and working_dir as templates and passes env values as written', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'script-cwd-'));
    const outcome = await run(
      script({
        command: '{{ tool }}',
        args: ['-c', 'echo "$1|$GREETING|$(pwd)"', 'sh', '{{ workflow.input.name | upper }}'],
        env: { GREETING: '{{ not rendered }}' },
        workingDir: '{{ where }}',
      }),
      { scope: { tool: 'sh', where: folder }, input: { name: 'ada' } },
    );
    const [name, greeting, cwd] = String((outcome.output as { stdout: string }).stdout)
      .trim()
      .split('|');
    expect(name).toBe('ADA');
    expect(greeting).toBe('{{ not rendered }}');
    expect(cwd).toMatch(/script-cwd-/);
  });

  it('merges a JSON object printed on stdout, and leaves arrays and plain text alone', async () => {
    const object = await run(
      shell(`echo '{"route": "planning", "issue_count": 3, "exit_code": "shadowed"}'`),
    );
    expect(object.output).toMatchObject({ route: 'planning', issue_count: 3, exit_code: 'shadowed' });
    const array = await run(shell(`echo '[1, 2]'`));
    expect(array.output).toEqual({ stdout: '[1, 2]\n', stderr: '', exit_code: 0 });
    const text = await run(shell('echo hello'));
    expect(text.output).toEqual({ stdout: 'hello\n', stderr: '', exit_code: 0 });
  });

  it('pipes the rendered stdin, and gives an empty stdin when there is none', async () => {
    const piped = await run(script({ command: 'cat', stdin: '{{ plan | tojson }}' }), {
      scope: { plan: { tasks: ['a', 'b'] } },
    });
    expect(JSON.parse((piped.output as { stdout: string }).stdout)).toEqual({ tasks: ['a', 'b'] });
    // Without stdin the child reads end-of-file at once instead of waiting on the terminal.
    const empty = await run(script({ command: 'cat' }));
    expect(empty.output).toEqual({ stdout: '', stderr: '', exit_code: 0 });
  });

  it('with output: declared, accepts one JSON object that matches and validates the merged output', async () => {
    const output = { route: field('string', { enum: ['planning', 'done'] }), exit_code: field('number') };
    const outcome = await run(shell(`echo '{"route": "done"}'`, { output }));
    expect(outcome.status).toBe('completed');
    expect(outcome.output).toMatchObject({ route: 'done', exit_code: 0 });
  });

  it('with output: declared, fails on text, on an array, and on a field that does not match', async () => {
    const output = { issue_count: field('number') };
    const text = await run(shell('echo starting; echo \'{"issue_count": 1}\'', { output }));
    expect(text.status).toBe('failed');
    expect(text.error?.code).toBe('SCHEMA');
    expect(text.error?.message).toMatch(/step "run".*not JSON/);
    const array = await run(shell(`echo '[1]'`, { output }));
    expect(array.error?.message).toMatch(/JSON array/);
    const wrong = await run(shell(`echo '{"issue_count": "three"}'`, { output }));
    expect(wrong.status).toBe('failed');
    expect(wrong.error?.message).toMatch(/issue_count/);
    // `output: {}` still demands a JSON object.
    const empty = await run(shell('echo plain', { output: {} }));
    expect(empty.status).toBe('failed');
  });

  it('fails with a clear message when the command does not exist', async () => {
    const outcome = await run(script({ command: 'no-such-tool-here', args: [] }));
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.message).toMatch(/command not found: "no-such-tool-here"/);
  });

  it('kills the script and everything it started when the timeout passes', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'script-timeout-'));
    const pidFile = join(folder, 'child.pid');
    const outcome = await run(shell(`sleep 60 & echo $! > "${pidFile}"; wait`, { timeoutSeconds: 0.5 }));
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('TIMEOUT');
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(await waitForProcessesGone([child], 5_000)).toEqual([]);
  });

  it('kills the script and everything it started when the step is aborted', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'script-abort-'));
    const pidFile = join(folder, 'child.pid');
    const controller = new AbortController();
    const pending = run(shell(`sleep 60 & echo $! > "${pidFile}"; wait`), { signal: controller.signal });
    await waitFor(() => {
      try {
        return readFileSync(pidFile, 'utf8').trim() !== '';
      } catch {
        return false;
      }
    });
    const child = Number(readFileSync(pidFile, 'utf8'));
    controller.abort();
    const outcome = await pending;
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('ABORTED');
    expect(await waitForProcessesGone([child], 5_000)).toEqual([]);
  });

  it('keeps secrets out of the captured output, parsed fields included', async () => {
    process.env['SWB_SCRIPT_TEST_API_KEY'] = 'not-a-real-key-1234567';
    resetSecrets();
    const folder = mkdtempSync(join(tmpdir(), 'script-secret-'));
    writeFileSync(
      join(folder, 'print.sh'),
      'echo "{\\"key\\": \\"$SWB_SCRIPT_TEST_API_KEY\\"}"; echo "$SWB_SCRIPT_TEST_API_KEY" >&2\n',
    );
    const outcome = await run(script({ command: 'sh', args: [join(folder, 'print.sh')] }));
    const serialized = JSON.stringify(outcome.output);
    expect(serialized).not.toContain('not-a-real-key-1234567');
    expect(outcome.output).toMatchObject({ key: '[redacted]', stderr: '[redacted]\n' });
  });
});

describe('script steps that cannot start or that escape their group', () => {
  it('fails with a clear message when working_dir does not exist', async () => {
    const outcome = await run(script({ command: 'sh', args: ['-c', 'true'], workingDir: '/no/such/folder' }));
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.message).toMatch(/working_dir \/no\/such\/folder is not a directory/);
  });

  it('on timeout also kills a child that moved to a session of its own', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'script-setsid-'));
    const pidFile = join(folder, 'child.pid');
    const outcome = await run(
      shell(`setsid sh -c 'echo $$ > "${pidFile}"; exec sleep 60' & wait`, { timeoutSeconds: 0.5 }),
    );
    expect(outcome.error?.code).toBe('TIMEOUT');
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(await waitForProcessesGone([child], 5_000)).toEqual([]);
  });
});
