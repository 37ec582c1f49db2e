import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../store/ledger.js';
import { createRouter } from './router.js';

const fixtures = join(import.meta.dirname, '../../test/fixtures');
const skills = join(fixtures, 'skills');
const stateDirectory = () => mkdtempSync(join(tmpdir(), 'switchboard-router-'));

describe('createRouter', () => {
  it('routes by pattern first, then by the learned model', async () => {
    const router = createRouter({ skills, stateDir: stateDirectory(), ledger: false });
    const byRule = await router.route('here is the stack trace from prod');
    expect(byRule).toMatchObject({ skill: 'fix-bug', method: 'rules' });
    const byModel = await router.route('the app crashes whenever I save');
    expect(byModel).toMatchObject({ skill: 'fix-bug', method: 'local' });
    expect(byModel.candidates[0]?.skill).toBe('fix-bug');
    expect(byModel.timings).toHaveProperty('rules');
    expect(byModel.timings).toHaveProperty('local');
    await router.close();
  });

  it('abstains on a request no skill fits', async () => {
    const router = createRouter({ skills, stateDir: stateDirectory(), ledger: false });
    const decision = await router.route('order a large pepperoni pizza for dinner');
    expect(decision.skill).toBe('none');
    expect(decision.method).toBe('local');
    await router.close();
  });

  it('answers an identical normalised request from the cache', async () => {
    const router = createRouter({ skills, stateDir: stateDirectory(), ledger: false });
    const first = await router.route('Add a dark mode setting');
    const second = await router.route('  add a DARK mode   setting ');
    expect(second.method).toBe('cache');
    expect(second.skill).toBe(first.skill);
    expect(second.id).not.toBe(first.id);
    await router.close();
  });

  it('in rules-only mode answers none when no rule matches', async () => {
    const router = createRouter({ skills, mode: 'rules-only', stateDir: stateDirectory(), ledger: false });
    expect(router.model).toBeUndefined();
    expect(await router.route('the app crashes whenever I save')).toMatchObject({
      skill: 'none',
      method: 'default',
    });
    await router.close();
  });

  it('keeps the trained model on disk and retrains when the skills change', () => {
    const stateDir = stateDirectory();
    const copy = join(stateDirectory(), 'skills');
    cpSync(skills, copy, { recursive: true });
    expect(createRouter({ skills: copy, stateDir, ledger: false }).model?.trained).toBe(true);
    expect(createRouter({ skills: copy, stateDir, ledger: false }).model?.trained).toBe(false);
    const file = join(copy, 'write-docs/SKILL.md');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('a guide or a tutorial', 'a guide, a tutorial or a FAQ'),
    );
    expect(createRouter({ skills: copy, stateDir, ledger: false }).model?.trained).toBe(true);
  });

  it('learns from a labelled training file and rejects unknown labels', async () => {
    const stateDir = stateDirectory();
    const training = join(stateDir, 'train.jsonl');
    writeFileSync(
      training,
      [
        '{"text": "the quarterly numbers need a chart", "expected": "write-docs"}',
        '{"text": "draw the quarterly numbers as a chart", "expected": "write-docs"}',
      ].join('\n'),
    );
    const router = createRouter({ skills, training: [training], stateDir, ledger: false });
    expect((await router.route('a chart of the quarterly numbers')).skill).toBe('write-docs');
    await router.close();
    writeFileSync(training, '{"text": "x", "expected": "ghost-skill"}\n');
    expect(() => createRouter({ skills, training: [training], stateDir, ledger: false })).toThrow(
      expect.objectContaining({ code: 'DATASET_INVALID', message: expect.stringMatching(/"ghost-skill"/) }),
    );
  });

  it('handles empty, huge and odd input sanely', async () => {
    const router = createRouter({ skills, stateDir: stateDirectory(), ledger: false });
    await expect(router.route('   ')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const huge = await router.route('the app crashes '.repeat(7000));
    expect(huge.warnings[0]).toMatch(/cut to its first/);
    const odd = await router.route('\uFFFD\uD800 💥 ☃ crash');
    expect(typeof odd.skill).toBe('string');
    await router.close();
  });

  it('records every decision in the ledger, as a hash unless text storage is on', async () => {
    const stateDir = stateDirectory();
    const router = createRouter({ skills, stateDir });
    await router.route('the app crashes whenever I save');
    await router.route('the app crashes whenever I save');
    await router.close();
    const ledger = openLedger({ stateDir });
    const rows = await ledger.listRouteDecisions({ limit: 10 });
    expect(rows).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain('whenever I save');
    await ledger.close();
  });
});
