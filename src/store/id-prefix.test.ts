import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowStore } from './workflow-records.js';

describe('a run looked up by the start of its id', () => {
  it('finds the only run a prefix names, takes % and _ literally, and refuses an ambiguous prefix', async () => {
    const store = await WorkflowStore.open({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-prefix-')) });
    try {
      for (const id of ['wf-a_1', 'wf-ab', 'wf-c%d'])
        await store.createRun({
          id,
          workflow: 'w',
          file: '/w.yaml',
          fileHash: 'h',
          inputs: {},
          currentStep: 's',
        });
      expect((await store.findRun('wf-a_'))?.id).toBe('wf-a_1');
      expect((await store.findRun('wf-c%'))?.id).toBe('wf-c%d');
      expect((await store.findRun('wf-ab'))?.id).toBe('wf-ab');
      expect(await store.findRun('wf-a')).toBeUndefined();
      expect(await store.findRun('wf-x')).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
