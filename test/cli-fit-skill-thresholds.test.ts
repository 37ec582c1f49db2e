import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/run-cli.js';

const root = join(import.meta.dirname, '..');
const fixtureSkills = join(root, 'test/fixtures/skills');
interface Decision {
  skill: string;
  reasoning: string;
}

function workspace(): { cwd: string; skills: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-fit-thresholds-'));
  const skills = join(cwd, 'skills');
  cpSync(fixtureSkills, skills, { recursive: true });
  return { cwd, skills };
}

function setFrontMatter(skills: string, skill: string, line: string): void {
  const file = join(skills, skill, 'SKILL.md');
  writeFileSync(file, readFileSync(file, 'utf8').replace(/^---\n/, `---\n${line}\n`));
}

async function route(
  cwd: string,
  skills: string,
  text: string,
): Promise<Decision & { status: number | null }> {
  const result = await runCli(['route', '--skills', skills, '--json', text], { cwd, env: process.env });
  expect(result.stderr).toBe('');
  return { ...(JSON.parse(result.stdout) as Decision), status: result.status };
}

describe('per-skill thresholds', () => {
  it("a skill's front matter and switchboard.yaml change the decision; the config wins", async () => {
    const { cwd, skills } = workspace();
    const offTopic = 'my car crashed on the highway';
    // Routed with the global thresholds (fix-bug at about 0.65 > 0.3). The decision cache stays on: a
    // changed threshold must not be answered from it.
    expect(await route(cwd, skills, offTopic)).toMatchObject({ skill: 'fix-bug', status: 0 });

    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'route:\n  skill_thresholds:\n    fix-bug: { confidence_threshold: 0.9 }\n',
    );
    const strictByConfig = await route(cwd, skills, offTopic);
    expect(strictByConfig).toMatchObject({ skill: 'none', status: 10 });
    expect(strictByConfig.reasoning).toMatch(/< fix-bug's threshold 0\.9/);
    // Only fix-bug is stricter: a confident fix-bug request and another skill's request still route.
    expect(await route(cwd, skills, 'the app crashes whenever I save')).toMatchObject({ skill: 'fix-bug' });
    expect(await route(cwd, skills, 'document the API')).toMatchObject({ skill: 'write-docs' });

    writeFileSync(join(cwd, 'switchboard.yaml'), '');
    setFrontMatter(skills, 'fix-bug', 'confidence_threshold: 0.9');
    expect(await route(cwd, skills, offTopic)).toMatchObject({ skill: 'none', status: 10 });

    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'route:\n  skill_thresholds:\n    fix-bug: { confidence_threshold: 0.5 }\n',
    );
    expect(await route(cwd, skills, offTopic)).toMatchObject({ skill: 'fix-bug', status: 0 });
  });

  it("eval's header names the primed examples and the skills with thresholds of their own", async () => {
    const { cwd, skills } = workspace();
    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'route:\n  skill_thresholds:\n    fix-bug: { confidence_threshold: 0.9 }\n',
    );
    const skillFile = join(skills, 'fix-bug', 'SKILL.md');
    const hash = createHash('sha256').update(readFileSync(skillFile)).digest('hex');
    writeFileSync(
      join(skills, '.switchboard-examples.jsonl'),
      ['the gizmo went kaput', 'my widget is busted again']
        .map((text) => JSON.stringify({ skill: 'fix-bug', hash, text }))
        .join('\n') + '\n',
    );
    const dataset = join(root, 'test/fixtures/dev.jsonl');
    const evaluated = await runCli(['eval', '--skills', 'skills', '--dataset', dataset], {
      cwd,
      env: process.env,
    });
    expect(evaluated.status, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toContain(
      `model trained also on 2 primed example(s) from ${join('skills', '.switchboard-examples.jsonl')} (written by route prime)`,
    );
    expect(evaluated.stdout).toContain('1 skill(s) use thresholds of their own: fix-bug (confidence ≥ 0.9)');
  });

  it('says when the config names no skill, and skips a skill whose threshold is no probability', async () => {
    const { cwd, skills } = workspace();
    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'route:\n  skill_thresholds:\n    fix-bugs: { confidence_threshold: 0.9 }\n',
    );
    setFrontMatter(skills, 'write-docs', 'margin_threshold: 1.5');
    const result = await runCli(['route', '--skills', skills, 'the app crashes whenever I save'], {
      cwd,
      env: process.env,
    });
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(
      /"margin_threshold" must be a number between 0 and 1, got 1\.5 \(skipped\)/,
    );
    expect(result.stderr).toMatch(/thresholds are set for "fix-bugs", which is not a skill here/);

    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'route:\n  skill_thresholds:\n    fix-bug: { confidence: 0.9 }\n',
    );
    const bad = await runCli(['route', '--skills', skills, 'hello'], { cwd, env: process.env });
    expect(bad.status).toBe(3);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});
