import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/run-cli.js';

const root = join(import.meta.dirname, '..');
const fixtureSkills = join(root, 'test/fixtures/skills');
/**
 * 50 rows on the fixture skills. fix-bug leads six out-of-scope requests ("my car crashed on the
 * highway") at 0.6–0.75, above add-feature's and write-docs' right answers at 0.5–0.7: only a threshold
 * of fix-bug's own refuses them without refusing those.
 */
const strictSkillSet = join(root, 'test/fixtures/fit/strict-skill.jsonl');

interface Figures {
  confidenceThreshold: number;
  marginThreshold: number;
  score: number;
  accuracy: number;
  inScopeAccuracy: number;
  outOfScopeRecall: number;
}

interface FitJson {
  thresholds: Figures;
  globalOnly: Figures;
  skillThresholds: Record<string, { confidenceThreshold?: number; marginThreshold?: number }>;
  skills: { skill: string; rows: number; wrongRows: number; outcome: string }[];
  warnings: string[];
}

function workspace(): { cwd: string; skills: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-fit-thresholds-'));
  const skills = join(cwd, 'skills');
  cpSync(fixtureSkills, skills, { recursive: true });
  return { cwd, skills };
}

describe('switchboard fit per skill', () => {
  it('finds the stricter threshold one skill needs, beats global-only, and the printed settings reproduce it', async () => {
    const { cwd, skills } = workspace();
    const fit = await runCli(
      ['fit', '--skills', skills, '--dataset', strictSkillSet, '--objective', 'accuracy', '--json'],
      { cwd, env: process.env },
    );
    expect(fit.status, fit.stderr).toBe(0);
    // 50 rows with none rows among them: no warning.
    expect(fit.stderr).toBe('');
    const report = JSON.parse(fit.stdout) as FitJson;
    expect(report.warnings).toEqual([]);
    const own = report.skillThresholds['fix-bug'];
    expect(own?.confidenceThreshold).toBeGreaterThan(report.thresholds.confidenceThreshold + 0.3);
    expect(Object.keys(report.skillThresholds)).toEqual(['fix-bug']);
    expect(report.skills.find((skill) => skill.skill === 'fix-bug')).toMatchObject({ outcome: 'fitted' });
    // Measured: 0.78 with global thresholds only, 0.86 with fix-bug's own.
    expect(report.globalOnly.score).toBeCloseTo(0.78, 6);
    expect(report.thresholds.score).toBeCloseTo(0.86, 6);

    const globalOnly = await runCli(
      [
        'fit',
        '--skills',
        skills,
        '--dataset',
        strictSkillSet,
        '--objective',
        'accuracy',
        '--no-per-skill',
        '--json',
      ],
      { cwd, env: process.env },
    );
    const plain = JSON.parse(globalOnly.stdout) as FitJson;
    expect(plain.skillThresholds).toEqual({});
    expect(plain.thresholds.score).toBeCloseTo(report.globalOnly.score, 12);

    // The text output's switchboard.yaml lines, pasted as they are, route the tuning set as reported.
    const text = await runCli(
      ['fit', '--skills', skills, '--dataset', strictSkillSet, '--objective', 'accuracy'],
      {
        cwd,
        env: process.env,
      },
    );
    const yaml = text.stdout.slice(text.stdout.indexOf('route:\n'));
    expect(yaml).toMatch(/^ {2}skill_thresholds:\n {4}fix-bug: \{ confidence_threshold: 0\.\d+/m);
    writeFileSync(join(cwd, 'switchboard.yaml'), yaml);
    const evaluated = await runCli(['eval', '--skills', skills, '--dataset', strictSkillSet, '--json'], {
      cwd,
      env: process.env,
    });
    expect(evaluated.status, evaluated.stderr).toBe(0);
    const { metrics } = JSON.parse(evaluated.stdout) as { metrics: Figures };
    expect(metrics.accuracy).toBeCloseTo(report.thresholds.accuracy, 12);
    expect(metrics.outOfScopeRecall).toBeCloseTo(report.thresholds.outOfScopeRecall, 12);
  });

  it('keeps the global thresholds for skills with few rows and warns about a small set without none rows', async () => {
    const { cwd, skills } = workspace();
    const rows = [
      { text: 'the server crashes with a stack trace', expected: 'fix-bug' },
      { text: 'add a setting for the theme', expected: 'add-feature' },
      { text: 'update the README with install steps', expected: 'write-docs' },
    ];
    writeFileSync(join(cwd, 'small.jsonl'), rows.map((row) => JSON.stringify(row)).join('\n'));
    const result = await runCli(['fit', '--skills', skills, '--dataset', 'small.jsonl', '--json'], {
      cwd,
      env: process.env,
    });
    expect(result.status, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as FitJson;
    expect(report.skillThresholds).toEqual({});
    expect(report.skills.every((skill) => skill.outcome === 'too-few-rows')).toBe(true);
    expect(result.stderr.trim().split('\n')).toEqual([
      'switchboard: warning: the tuning set has 3 row(s), fewer than 50: the thresholds fitted on it are noisy; label more requests',
      'switchboard: warning: the tuning set has no "none" rows, so nothing sets when to abstain: add requests no skill should take, labelled "none"',
    ]);
    expect(report.warnings).toHaveLength(2);
  });
});
