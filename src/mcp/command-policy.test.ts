import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StepDefinition, WorkflowDefinition } from '../workflows/model.js';
import { checkAgentRun, checkWorkflow, resolveRepoRoots } from './command-policy.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-policy-')));
const root = join(base, 'root');
mkdirSync(join(root, 'repo'), { recursive: true });
mkdirSync(join(base, 'rootless'));
symlinkSync(join(base, 'rootless'), join(root, 'link'));

afterAll(() => rmSync(base, { recursive: true, force: true }));

const allowed = { allowCommands: true, repoRoots: [root] };

function workflow(file: string, ...steps: StepDefinition[]): WorkflowDefinition {
  return {
    file,
    dir: dirname(file),
    runtime: {
      mcpServers: {
        toolbox: { type: 'stdio', command: 'toolbox', args: [], env: {}, headers: {}, tools: [] },
      },
    },
    name: 'w',
    steps: new Map(steps.map((step) => [step.name, step])),
    groups: new Map(),
  } as unknown as WorkflowDefinition;
}

const step = (fields: Partial<StepDefinition> & Pick<StepDefinition, 'type'>): StepDefinition =>
  ({ name: 's', routes: [], input: [], prompt: 'p', ...fields }) as StepDefinition;

describe('checkAgentRun', () => {
  it('lets stdio (no policy) do anything and HTTP nothing unless commands are allowed', async () => {
    await expect(checkAgentRun(undefined, { repo: '/' })).resolves.toBeUndefined();
    await expect(
      checkAgentRun({ allowCommands: false, repoRoots: [root] }, { repo: join(root, 'repo') }),
    ).rejects.toThrow(/agent_run runs an agent and commands/);
  });

  it('takes repositories and task files whose real path is under a root', async () => {
    await expect(checkAgentRun(allowed, { repo: join(root, 'repo') })).resolves.toBeUndefined();
    await expect(
      checkAgentRun(allowed, { repo: 'repo', taskFile: 'repo/task.yaml' }, root),
    ).resolves.toBeUndefined();
    for (const repo of [base, `${root}-other`, join(root, 'link'), join(root, '..', 'rootless'), '/'])
      await expect(checkAgentRun(allowed, { repo }), repo).rejects.toThrow(/is outside the folders/);
    await expect(
      checkAgentRun(allowed, { repo: join(root, 'repo'), taskFile: '/etc/passwd' }),
    ).rejects.toThrow(/the task file .* is outside/);
    for (const repo of ['https://example.com/x.git', 'git@example.com:x.git', 'file:///srv/x.git'])
      await expect(checkAgentRun(allowed, { repo }), repo).rejects.toThrow(/only in local repositories/);
  });
});

describe('checkWorkflow', () => {
  it('refuses only the steps that can run a command, and those only outside the roots', () => {
    const outside = join(base, 'flow.yaml');
    const harmless = [
      step({ type: 'set' }),
      step({ type: 'agent', tools: [] }),
      // tools: [] reaches no server: none is started.
      step({ type: 'agent', tools: [], mcp: true }),
    ];
    for (const each of harmless)
      expect(() =>
        checkWorkflow({ allowCommands: false, repoRoots: [] }, workflow(outside, each)),
      ).not.toThrow();
    const commands = [
      step({ type: 'script' }),
      step({ type: 'agent', tools: ['Bash'], workingDir: root }),
      // Left out, tools: gives a step on an API provider write_file, edit_file and run_command.
      step({ type: 'agent', workingDir: root }),
      step({ type: 'agent', tools: ['write_file'], workingDir: root }),
      step({ type: 'agent', tools: ['edit_file'], workingDir: root }),
      step({ type: 'agent', tools: ['read_file', 'run_command'], workingDir: root }),
      step({ type: 'agent', tools: ['Write'], workingDir: root }),
      step({ type: 'agent', mcp: true, workingDir: root }),
      step({ type: 'agent', tools: ['toolbox__lookup'], mcp: ['toolbox'] }),
      step({ type: 'agent', git: {} as never }),
    ];
    for (const each of commands) {
      expect(() =>
        checkWorkflow({ allowCommands: false, repoRoots: [root] }, workflow(outside, each)),
      ).toThrow(/does not allow over HTTP/);
      expect(() => checkWorkflow(allowed, workflow(outside, each))).toThrow(/is outside the folders/);
      expect(() => checkWorkflow(allowed, workflow(join(root, 'flow.yaml'), each))).not.toThrow();
      expect(() => checkWorkflow(undefined, workflow(outside, each))).not.toThrow();
    }
  });

  it('reads tools: as the engine runs it: left out, the file tools read the working directory, which must be under a root', () => {
    const outside = join(base, 'flow.yaml');
    const policies = [
      { allowCommands: false, repoRoots: [root] },
      allowed,
      { allowCommands: false, repoRoots: [] },
    ];
    for (const readsFiles of [
      step({ type: 'agent', workingDir: '/' }),
      step({ type: 'agent', tools: ['Read'], workingDir: '/' }),
      step({ type: 'agent', tools: ['search_files'], workingDir: '../..' }),
      step({ type: 'agent', tools: ['Grep'], workingDir: '{{ inputs.dir }}' }),
    ]) {
      for (const policy of policies)
        expect(() => checkWorkflow(policy, workflow(join(root, 'flow.yaml'), readsFiles))).toThrow(
          /reads files .* in its working directory/,
        );
      expect(() => checkWorkflow(undefined, workflow(outside, readsFiles))).not.toThrow();
    }
    // Under a root, reading files needs no --allow-commands: nothing runs.
    const inside = step({ type: 'agent', tools: ['read_file', 'Glob'], workingDir: join(root, 'repo') });
    expect(() =>
      checkWorkflow({ allowCommands: false, repoRoots: [root] }, workflow(outside, inside)),
    ).not.toThrow();
    expect(() =>
      checkWorkflow(
        { allowCommands: false, repoRoots: [root] },
        workflow(outside, step({ type: 'agent', workingDir: join(root, 'repo'), mcp: true })),
      ),
    ).toThrow(/does not allow over HTTP/);
    // Left out, tools: writes and runs commands: the error says how to keep the step read-only.
    expect(() =>
      checkWorkflow(
        { allowCommands: false, repoRoots: [root] },
        workflow(outside, step({ type: 'agent', workingDir: join(root, 'repo') })),
      ),
    ).toThrow(/tools: left out gives a step on an API provider write_file, edit_file and run_command/);
  });
});

describe('resolveRepoRoots', () => {
  it('follows links and refuses a root that is not a folder', () => {
    expect(resolveRepoRoots([join(root, 'link')])).toEqual([join(base, 'rootless')]);
    expect(() => resolveRepoRoots([join(base, 'missing')])).toThrow(/repository root .* does not exist/);
  });
});
