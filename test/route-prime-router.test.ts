import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planPrime } from '../src/route/prime/prime.js';
import { createRouter } from '../src/route/router.js';

// What a router takes from a hand-edited `.switchboard-examples.jsonl`: the library, real files.

const REQUEST = 'the gizmo went kaput';

function skillsFolder(): string {
  const folder = join(mkdtempSync(join(tmpdir(), 'switchboard-primed-')), 'skills');
  mkdirSync(folder);
  writeFileSync(
    join(folder, 'fix-bug.md'),
    '---\nname: fix-bug\ndescription: Repair a defect in the code.\n---\n',
  );
  writeFileSync(
    join(folder, 'write-docs.md'),
    '---\nname: write-docs\ndescription: Write or update the documentation.\n---\n',
  );
  return folder;
}

const hashOf = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

function writeRows(folder: string, lines: readonly string[]): void {
  writeFileSync(join(folder, '.switchboard-examples.jsonl'), `${lines.join('\n')}\n`);
}

const gizmoRows = (hash: string) =>
  ['my gizmo is kaput', 'the gizmo went kaput again', 'kaput gizmo after the update'].map((text) =>
    JSON.stringify({ skill: 'fix-bug', hash, text }),
  );

const router = (folder: string, mode: 'local' | 'hybrid' | 'rules-only' = 'local') =>
  createRouter({ skills: folder, mode, ledger: false, cache: false });

describe('primed examples in the router', () => {
  it('trains on rows written for the current skill file, and the model changes with the file', async () => {
    const folder = skillsFolder();
    const bare = router(folder);
    expect((await bare.route(REQUEST)).skill).toBe('none');

    writeRows(folder, gizmoRows(hashOf(join(folder, 'fix-bug.md'))));
    const primed = router(folder);
    expect(primed.warnings).toEqual([]);
    expect(await primed.route(REQUEST)).toMatchObject({ skill: 'fix-bug', method: 'local' });
    expect(primed.model?.key).not.toBe(bare.model?.key);
  });

  it('ignores rows of an edited or unknown skill and lines that are not rows, with one warning each', async () => {
    const folder = skillsFolder();
    writeRows(folder, [
      ...gizmoRows('0'.repeat(64)),
      JSON.stringify({ skill: 'gone-skill', hash: 'x', text: 'whatever' }),
      'not json',
      JSON.stringify({ skill: 'fix-bug', text: 'no hash' }),
    ]);
    const stale = router(folder);
    expect(await stale.route(REQUEST)).toMatchObject({ skill: 'none' });
    expect(stale.warnings).toHaveLength(2);
    expect(stale.warnings[0]).toMatch(/\.switchboard-examples\.jsonl: ignored line\(s\) 5, 6,/);
    expect(stale.warnings[1]).toMatch(
      /ignored the primed examples of fix-bug, gone-skill, .*`switchboard route prime --skills .*skills` writes them again/,
    );
    // A malformed line is a warning for routing, but `route prime` would lose it by rewriting the file.
    expect(() => planPrime({ skills: folder })).toThrow(/line\(s\) 5, 6 are not/);
    // Modes without the model do not read the file.
    expect(router(folder, 'rules-only').warnings).toEqual([]);
  });

  it('names the skills with neither examples nor primed rows in hybrid mode only', () => {
    const folder = skillsFolder();
    writeRows(folder, gizmoRows(hashOf(join(folder, 'fix-bug.md'))));
    expect(router(folder, 'local').warnings).toEqual([]);
    const hybrid = router(folder, 'hybrid').warnings;
    expect(hybrid).toContainEqual(
      expect.stringMatching(/^1 of 2 skill\(s\) have no examples \(write-docs\)/),
    );
  });
});
