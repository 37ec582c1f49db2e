import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AgentRunStore } from '../../src/agents/run-store.js';
import { DEFAULT_LIMITS } from '../../src/agents/task.js';

// What the dashboard's tests (test/serve-ui.test.ts, test/dashboard.browser.test.ts) record in a ledger
// before they look at it.

/** A run that parks at a gate after one `set` step showing its input: the text a page must escape. */
export const GATE_WORKFLOW = `
workflow:
  name: ui-gate
  entry_point: note
  input:
    text:
      type: string
agents:
  - name: note
    type: set
    value: '{{ workflow.input.text }}'
    routes: [{ to: decide }]
  - name: decide
    type: human_gate
    prompt: 'Ship {{ note.output }}?'
    options:
      - { label: Ship it, value: ship, route: $end }
      - { label: Drop it, value: drop, route: $end, prompt_for: reason }
output:
  note: '{{ note.output }}'
`;

/** What an agent run is about, for `recordAgentRun`. */
export interface RecordedAgentRun {
  repo: string;
  base: string;
  commit: string;
  title: string;
  description: string;
  /** Events as the runner adds them: phase, kind, message, data. */
  events?: Array<[string, string, string, unknown]>;
}

/** An agent run as the runner records it, ended (succeeded) with `commit` on `repo`; its id. */
export async function recordAgentRun(stateDir: string, run: RecordedAgentRun): Promise<string> {
  const store = await AgentRunStore.open(stateDir);
  const id = `ar-${randomBytes(4).toString('hex')}`;
  const taskId = run.title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  await store.insert({
    id,
    taskId,
    title: run.title,
    repo: run.repo,
    baseBranch: 'main',
    baseCommit: run.base,
    branch: `switchboard/${taskId}`,
    worktree: join(run.repo, '..', `worktree-${id}`),
    phase: 'done',
    status: 'running',
    attempt: 1,
    costUsd: 0,
    turns: 0,
    task: {
      id: taskId,
      title: run.title,
      description: run.description,
      acceptance: [],
      tools: ['Read', 'Edit'],
      passEnvironment: [],
      limits: DEFAULT_LIMITS,
    },
    options: { merge: 'no-ff', retryDelayMs: 1000 },
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  });
  for (const [phase, kind, message, data] of run.events ?? [])
    await store.addEvent(id, phase, kind, message, data);
  await store.update(id, {
    status: 'succeeded',
    phase: 'done',
    commitSha: run.commit,
    costUsd: 0.03,
    ended: true,
  });
  await store.close();
  return id;
}
