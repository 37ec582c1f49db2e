import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compilePattern, hashSkills, loadSkills } from './skills.js';

function folder(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'switchboard-skills-'));
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(join(full, '..'), { recursive: true });
    writeFileSync(full, content);
  }
  return root;
}

const skill = (name: string, description = `handles ${name}`, extra = '') =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\n# ${name}\n`;

describe('loadSkills', () => {
  it('reads the Claude Code layout and ignores the skill folder’s other files', () => {
    const root = folder({
      'deploy/SKILL.md': skill(
        'deploy',
        'ship things',
        'examples:\n  - push it live\npatterns: ["\\\\bdeploy\\\\b"]\ncategory: ops\n',
      ),
      'deploy/reference.md': skill('not-a-skill'),
      'triage/SKILL.md': skill('triage'),
    });
    const { skills, problems } = loadSkills(root);
    expect(problems).toEqual([]);
    expect(skills.map((s) => s.name).sort()).toEqual(['deploy', 'triage']);
    const deploy = skills.find((s) => s.name === 'deploy');
    expect(deploy).toMatchObject({
      description: 'ship things',
      examples: ['push it live'],
      patterns: ['\\bdeploy\\b'],
      category: 'ops',
    });
  });

  it('reads flat markdown files recursively and skips files without front matter', () => {
    const root = folder({
      'a.md': skill('alpha'),
      'nested/deeper/b.md': skill('beta'),
      'notes.md': '# just notes\nno front matter here\n',
      'readme.txt': skill('ignored'),
    });
    const { skills, problems } = loadSkills(root);
    expect(skills.map((s) => s.name).sort()).toEqual(['alpha', 'beta']);
    expect(problems).toEqual([]);
  });

  it('reports malformed front matter, missing fields, bad patterns and duplicates, and loads the rest', () => {
    const root = folder({
      'good.md': skill('good'),
      'bad-yaml.md': '---\nname: [unclosed\ndescription: x\n---\n',
      'no-name.md': '---\ndescription: something\n---\n',
      'no-description.md': '---\nname: lonely\n---\n',
      'bad-pattern.md': skill('patterned', 'x', 'patterns: ["(unclosed"]\n'),
      'z-duplicate.md': skill('good', 'again'),
    });
    const { skills, problems } = loadSkills(root);
    expect(skills.map((s) => s.name)).toEqual(['good']);
    const reasons = Object.fromEntries(problems.map((p) => [p.file.split('/').pop(), p.reason]));
    expect(reasons['bad-yaml.md']).toMatch(/not valid YAML/);
    expect(reasons['no-name.md']).toMatch(/no "name"/);
    expect(reasons['no-description.md']).toMatch(/no "description"/);
    expect(reasons['bad-pattern.md']).toMatch(/not a valid regex/);
    expect(reasons['z-duplicate.md']).toMatch(/duplicate skill name "good".*good\.md/);
  });

  it('reads front matter with CRLF line ends, a BOM, a `...` end, and a body that holds `---` lines', () => {
    const root = folder({
      'crlf.md': '\uFEFF---\r\nname: crlf\r\ndescription: windows line ends\r\n---\r\nbody\r\n',
      'dots.md': '---\nname: dots\ndescription: yaml document end\n...\nbody\n',
      'rule.md': '---\nname: rule\ndescription: a rule in the body\n---\nintro\n\n---\n\nmore: text\n',
    });
    const { skills, problems } = loadSkills(root);
    expect(problems).toEqual([]);
    expect(Object.fromEntries(skills.map((s) => [s.name, s.description]))).toEqual({
      crlf: 'windows line ends',
      dots: 'yaml document end',
      rule: 'a rule in the body',
    });
  });

  it('keeps the markdown after the front matter as the skill body', () => {
    const root = folder({
      'with-body.md':
        '---\nname: with-body\ndescription: has instructions\n---\n# Title\n\nReproduce it first.\n',
      'bare.md': '---\nname: bare\ndescription: front matter only\n---\n',
    });
    const { skills } = loadSkills(root);
    expect(Object.fromEntries(skills.map((s) => [s.name, s.body]))).toEqual({
      'with-body': '# Title\n\nReproduce it first.',
      bare: undefined,
    });
  });

  it('fails on the first problem with --strict', () => {
    const root = folder({ 'good.md': skill('good'), 'no-name.md': '---\ndescription: x\n---\n' });
    expect(() => loadSkills(root, { strict: true })).toThrow(
      expect.objectContaining({ code: 'SKILLS_INVALID' }),
    );
  });

  it('names the problem when the folder is missing or holds no skills', () => {
    expect(() => loadSkills('/definitely/not/here')).toThrow(/does not exist/);
    const empty = folder({ 'notes.md': 'plain text' });
    expect(() => loadSkills(empty)).toThrow(
      expect.objectContaining({ code: 'SKILLS_INVALID', message: expect.stringMatching(/no skills found/) }),
    );
  });

  it('refuses a skill named "none"', () => {
    const root = folder({ 'a.md': skill('alpha'), 'none.md': skill('none') });
    expect(loadSkills(root).problems[0]?.reason).toMatch(/reserved/);
  });
});

describe('loadSkills with a cache folder', () => {
  it('gives the same skills from the cache, and sees an edit even when the size stays the same', () => {
    const root = folder({ 'deploy.md': skill('deploy', 'ship v1'), 'triage.md': skill('triage') });
    const cacheDir = mkdtempSync(join(tmpdir(), 'switchboard-skills-cache-'));
    const first = loadSkills(root, { cacheDir });
    expect(readdirSync(cacheDir)).toHaveLength(1);
    expect(loadSkills(root, { cacheDir })).toEqual(first);

    writeFileSync(join(root, 'deploy.md'), skill('deploy', 'ship v2'));
    writeFileSync(join(root, 'triage.md'), 'no front matter any more\n');
    writeFileSync(join(root, 'broken.md'), '---\nname: [unclosed\n---\n');
    const { skills, problems } = loadSkills(root, { cacheDir });
    expect(skills.map((s) => [s.name, s.description])).toEqual([['deploy', 'ship v2']]);
    expect(problems.map((p) => p.reason)).toEqual([expect.stringMatching(/not valid YAML/)]);
  });

  it('ignores a corrupt cache file and rewrites it', () => {
    const root = folder({ 'deploy.md': skill('deploy') });
    const cacheDir = mkdtempSync(join(tmpdir(), 'switchboard-skills-cache-'));
    loadSkills(root, { cacheDir });
    const [cacheFile] = readdirSync(cacheDir);
    writeFileSync(join(cacheDir, cacheFile as string), '{"version": 1, "files": ');
    expect(loadSkills(root, { cacheDir }).skills.map((s) => s.name)).toEqual(['deploy']);
    expect(loadSkills(root, { cacheDir }).skills.map((s) => s.name)).toEqual(['deploy']);
  });
});

describe('compilePattern', () => {
  it('is case-insensitive and accepts /source/flags', () => {
    expect(compilePattern('deploy').test('DEPLOY now')).toBe(true);
    expect(compilePattern('/^fix/').test('Fix it')).toBe(true);
  });
});

describe('hashSkills', () => {
  it('changes when a description changes and ignores order', () => {
    const a = { name: 'a', description: 'x', examples: [], patterns: [], file: 'a.md' };
    const b = { name: 'b', description: 'y', examples: [], patterns: [], file: 'b.md' };
    expect(hashSkills([a, b])).toBe(hashSkills([b, a]));
    expect(hashSkills([a, b])).not.toBe(hashSkills([{ ...a, description: 'z' }, b]));
    // The body trains the local model, so an edited body is a different skill set.
    expect(hashSkills([a, b])).not.toBe(hashSkills([{ ...a, body: 'Reproduce it first.' }, b]));
  });
});
