import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from './datasets.js';

function file(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'switchboard-data-')), name);
  writeFileSync(path, content);
  return path;
}

describe('loadDataset', () => {
  it('reads JSONL rows with alternates and maps none', () => {
    const path = file(
      'set.jsonl',
      '{"text": "it broke", "expected": "fix", "alternates": ["debug"]}\n\n{"text": "pizza", "expected": "none"}\n',
    );
    expect(loadDataset(path)).toEqual([
      { text: 'it broke', expected: 'fix', alternates: ['debug'] },
      { text: 'pizza', expected: 'none' },
    ]);
  });

  it('reads CLINC150 JSON by split and maps oos to none', () => {
    const path = file(
      'clinc.json',
      JSON.stringify({ train: [['book a flight', 'book_flight']], oos_test: [['sing to me', 'oos']] }),
    );
    expect(loadDataset(path, { splits: ['oos_test'] })).toEqual([{ text: 'sing to me', expected: 'none' }]);
    expect(loadDataset(`${path}#train,oos_test`)).toHaveLength(2);
    expect(() => loadDataset(path)).toThrow(/holds several splits/);
    expect(() => loadDataset(path, { splits: ['dev'] })).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(/no split "dev"/),
        hint: 'available splits: train, oos_test',
      }),
    );
  });

  it('names the line of a broken row', () => {
    const path = file('bad.jsonl', '{"text": "ok", "expected": "a"}\n{"text": "no label"}\n');
    expect(() => loadDataset(path)).toThrow(/bad\.jsonl:2 needs string fields/);
    const notJson = file('worse.jsonl', '{"text": "ok", "expected": "a"}\nnot json\n');
    expect(() => loadDataset(notJson)).toThrow(expect.objectContaining({ code: 'DATASET_INVALID' }));
    expect(() => loadDataset('/nope.jsonl')).toThrow(/cannot read dataset/);
    expect(() => loadDataset(file('empty.jsonl', '\n'))).toThrow(/holds no examples/);
  });

  it('a file cut short is reported as the JSON it is not, with the line of a JSONL row', () => {
    const cut = file('cut.jsonl', '{"text": "the app crashes when I click save", "expec');
    expect(() => loadDataset(cut)).toThrow(/cut\.jsonl:1 is not valid JSON/);
    const cutFirst = file('cut-first.jsonl', '{"text": "hel\n{"text": "ok", "expected": "a"}\n');
    expect(() => loadDataset(cutFirst)).toThrow(/cut-first\.jsonl:1 is not valid JSON/);
    const cutClinc = file('cut.json', '{"train": [["hello", "greet"], ["bye", "fare');
    expect(() => loadDataset(cutClinc)).toThrow(/cut\.json is not valid JSON \(/);
    for (const path of [cut, cutFirst, cutClinc])
      expect(() => loadDataset(path)).not.toThrow(/JSON object of splits/);
  });
});
