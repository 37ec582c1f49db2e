import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowStore } from './workflow-records.js';

describe('a run looked up by the start of its id', () => {
  it('finds the only run a prefix names, takes % and _ literally, and refuses an ambiguous prefix', () => {
    const store = WorkflowStore.open({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-prefix-')) });
    try {
      for (const id of ['wf-a_1', 'wf-ab', 'wf-c%d'])
        store.createRun({ id, workflow: 'w', file: '/w.yaml', fileHash: 'h', inputs: {}, currentStep: 's' });
      expect(store.findRun('wf-a_')?.id).toBe('wf-a_1');
      expect(store.findRun('wf-c%')?.id).toBe('wf-c%d');
      expect(store.findRun('wf-ab')?.id).toBe('wf-ab');
      expect(store.findRun('wf-a')).toBeUndefined();
      expect(store.findRun('wf-x')).toBeUndefined();
    } finally {
      store.close();
    }
  });
});
