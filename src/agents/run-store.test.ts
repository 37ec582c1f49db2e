import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from '../../test/helpers/postgres.js';
import { agentRunRecord, FIXTURE_TASK } from './__fixtures__/agent-run.js';
import { AgentRunStore } from './run-store.js';

// The agent-run tables on both backends: what `agent ls/show/resume/cancel` read and the runner writes.
describe.each([
  { name: 'sqlite', skip: undefined },
  { name: 'postgres', skip: POSTGRES_SKIP },
])('AgentRunStore on $name', ({ name, skip }) => {
  let folder: string;
  let database: TestDatabase | undefined;
  const stores: AgentRunStore[] = [];

  beforeEach(async (context) => {
    if (skip !== undefined) return context.skip();
    folder = mkdtempSync(join(tmpdir(), 'agent-store-'));
    if (name === 'postgres') database = await createTestDatabase();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await database?.drop();
    database = undefined;
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  });

  async function open(): Promise<AgentRunStore> {
    const store = await AgentRunStore.open(folder, database === undefined ? {} : { url: database.url });
    stores.push(store);
    return store;
  }

  const task = FIXTURE_TASK;
  const run = (id: string, repo = '/repos/app') => agentRunRecord(id, { repo, runnerPid: 4242 });

  it('records a run, updates it, and reads it back by id, by prefix and in lists', async () => {
    const store = await open();
    await store.insert(run('fix-bug-aaa111'));
    await store.insert(run('fix-bug-bbb222', '/repos/other'));
    await store.update('fix-bug-aaa111', {
      phase: 'done',
      status: 'succeeded',
      costUsd: 0.125,
      turns: 3,
      commitSha: 'def456',
      error: 'token sk-ant-abcdefghijklmnopqrstuvwxyz0123 leaked',
      ended: true,
    });
    const stored = await store.get('fix-bug-aaa111');
    expect(stored).toMatchObject({
      phase: 'done',
      status: 'succeeded',
      costUsd: 0.125,
      turns: 3,
      commitSha: 'def456',
    });
    expect(stored?.error).not.toContain('sk-ant-abcdefghijklmnopqrstuvwxyz0123');
    expect(stored?.endedAt).toBeDefined();
    expect(stored?.task).toEqual(task);
    expect((await store.find('fix-bug-b'))?.id).toBe('fix-bug-bbb222');
    expect(await store.find('fix-bug-')).toBeUndefined(); // two match: not a unique prefix
    expect((await store.list()).map((each) => each.id)).toEqual(['fix-bug-bbb222', 'fix-bug-aaa111']);
    expect((await store.list({ repo: '/repos/other' })).map((each) => each.id)).toEqual(['fix-bug-bbb222']);
  });

  it('lets exactly one of several stores claim a run from its recorded runner', async () => {
    const first = await open();
    await first.insert(run('r1'));
    const others = await Promise.all([open(), open(), open()]);
    const claims = await Promise.all(
      others.map((store, index) =>
        store.claim('r1', { runnerPid: 4242, runnerHost: hostname() }, 5000 + index),
      ),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    const winner = 5000 + claims.indexOf(true);
    expect((await first.get('r1'))?.runnerPid).toBe(winner);
    expect(await first.claim('r1', { runnerPid: 4242, runnerHost: hostname() }, 6000)).toBe(false);
    await first.update('r1', { runnerPid: null });
    expect(await first.claim('r1', {}, 6000)).toBe(true);
  });

  it('keeps events in the order they were written', async () => {
    const store = await open();
    await store.insert(run('r2'));
    for (const kind of ['phase', 'attempt-start', 'attempt-end', 'merge']) {
      await store.addEvent('r2', 'agent', kind, `${kind} happened`, { kind });
    }
    expect((await store.events('r2')).map((event) => [event.kind, event.data])).toEqual([
      ['phase', { kind: 'phase' }],
      ['attempt-start', { kind: 'attempt-start' }],
      ['attempt-end', { kind: 'attempt-end' }],
      ['merge', { kind: 'merge' }],
    ]);
  });
});
