import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    name: 'w',
    steps: new Map(steps.map((step) => [step.name, step])),
    groups: new Map(),
  } as WorkflowDefinition;
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
    const harmless = [step({ type: 'set' }), step({ type: 'agent' }), step({ type: 'agent', tools: [] })];
    for (const each of harmless)
      expect(() =>
        checkWorkflow({ allowCommands: false, repoRoots: [] }, workflow(outside, each)),
      ).not.toThrow();
    const commands = [
      step({ type: 'script' }),
      step({ type: 'agent', tools: ['Bash'] }),
      step({ type: 'agent', mcp: true }),
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
});

describe('resolveRepoRoots', () => {
  it('follows links and refuses a root that is not a folder', () => {
    expect(resolveRepoRoots([join(root, 'link')])).toEqual([join(base, 'rootless')]);
    expect(() => resolveRepoRoots([join(base, 'missing')])).toThrow(/repository root .* does not exist/);
  });
});
