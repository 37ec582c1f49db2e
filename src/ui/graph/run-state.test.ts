import { describe, expect, it } from 'vitest';
import type { WorkflowEventRecord, WorkflowGraph } from '../../serve/ui/api-types.js';
import { layoutGraph } from './graph-layout.js';
import { edgeKey, foldRun, visitTotals } from './run-state.js';

// What the run graph shows, folded from a run's events as the engine writes them (docs/workflows.md,
// "Events"): the page's statuses, loops, groups and replay all come from here.

const RUN = 'wf-1';
let seq = 0;

function event(type: string, key?: string, data: Record<string, unknown> = {}): WorkflowEventRecord {
  seq += 1;
  const record: WorkflowEventRecord = {
    runId: RUN,
    seq,
    at: new Date(1_000 * seq).toISOString(),
    type,
    data,
  };
  if (key !== undefined) {
    record.key = `${RUN}/${key}`;
    record.step = key.split('/')[0] as string;
  }
  return record;
}

describe('foldRun', () => {
  it('follows a loop: each visit counted, the latest one shown, the routes taken marked', () => {
    const events = [
      event('run-start'),
      event('step-start', 'draft/0'),
      event('model-turn', 'draft/0', { inputTokens: 100, outputTokens: 20, costUsd: 0.01 }),
      event('step-end', 'draft/0', { status: 'completed', next: 'review', costUsd: 0.01 }),
      event('step-start', 'review/0'),
      event('step-end', 'review/0', { status: 'completed', next: 'draft' }),
      event('step-start', 'draft/1'),
    ];
    const state = foldRun(RUN, events);
    const draft = state.nodes.get('draft');
    expect(draft).toMatchObject({ status: 'running', visits: 2, tokens: 120 });
    expect(state.nodes.get('review')?.status).toBe('completed');
    expect([...state.taken]).toEqual([edgeKey('draft', 'review'), edgeKey('review', 'draft')]);
    // A replay up to the third event shows the first visit only.
    expect(foldRun(RUN, events.slice(0, 3)).nodes.get('draft')).toMatchObject({
      status: 'running',
      visits: 1,
    });
  });

  it('counts a for_each to its known size, and marks running work interrupted when the run ended', () => {
    const events = [
      event('run-start'),
      event('group-start', 'shout/0', { kind: 'for_each' }),
      event('group-members', 'shout/0', { count: 3, members: ['0', '1', '2'] }),
      event('step-start', 'shout/0/0'),
      event('step-end', 'shout/0/0', { status: 'completed' }),
      event('step-start', 'shout/0/1'),
      event('run-end', undefined, { status: 'failed' }),
    ];
    const state = foldRun(RUN, events);
    const group = state.nodes.get('shout');
    expect(group?.memberCount).toBe(3);
    expect(group?.members).toEqual([
      { name: '0', status: 'completed' },
      { name: '1', status: 'interrupted' },
    ]);
    expect(state.runStatus).toBe('failed');
  });
});

describe('visitTotals', () => {
  it("sums a group's visit with its members: what its node and its detail both show", () => {
    const events = [
      event('run-start'),
      event('group-start', 'fan/0', { kind: 'for_each' }),
      event('step-start', 'fan/0/a'),
      event('model-turn', 'fan/0/a', { inputTokens: 100, outputTokens: 20 }),
      event('step-end', 'fan/0/a', { status: 'completed', costUsd: 0.01 }),
      event('step-start', 'fan/0/b'),
      event('model-turn', 'fan/0/b', { inputTokens: 50, outputTokens: 5 }),
      event('step-end', 'fan/0/b', { status: 'completed', costUsd: 0.02 }),
      event('group-end', 'fan/0', { status: 'completed' }),
    ];
    const state = foldRun(RUN, events);
    const totals = visitTotals(state.visits, `${RUN}/fan/0`);
    expect(totals.tokens).toBe(175);
    expect(totals.costUsd).toBeCloseTo(0.03);
    expect(state.nodes.get('fan')).toMatchObject({ tokens: totals.tokens, costUsd: totals.costUsd });
    // A member alone is its own.
    expect(visitTotals(state.visits, `${RUN}/fan/0/a`).tokens).toBe(120);
  });
});

describe('layoutGraph', () => {
  it('lays out every step once with dagre, and tells a loop-back from a forward route', () => {
    const graph: WorkflowGraph = {
      entryPoint: 'draft',
      steps: [
        { name: 'draft', type: 'agent', routes: [{ to: 'review' }] },
        {
          name: 'review',
          type: 'agent',
          routes: [{ to: 'draft', when: 'verdict == "revise"' }, { to: '$end' }],
        },
      ],
      groups: [],
    };
    const layout = layoutGraph(graph);
    const ids = layout.nodes.map((node) => node.id);
    expect(ids).toEqual(expect.arrayContaining(['draft', 'review']));
    expect(new Set(ids).size).toBe(ids.length);
    const back = layout.edges.find((edge) => edge.source === 'review' && edge.target === 'draft');
    const forward = layout.edges.find((edge) => edge.source === 'draft' && edge.target === 'review');
    expect(back?.loopBack).toBe(true);
    expect(back?.when).toBe('verdict == "revise"');
    expect(forward?.loopBack).toBe(false);
    const draft = layout.nodes.find((node) => node.id === 'draft');
    const review = layout.nodes.find((node) => node.id === 'review');
    expect((review?.y ?? 0) > (draft?.y ?? 0)).toBe(true);
  });
});
