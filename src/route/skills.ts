import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { NONE, type Skill, type SkillThresholds } from '../core/route-types.js';
import { loadYaml } from '../core/lazy-packages.js';
import { linearRegex, type LinearRegex } from '../core/linear-regex.js';
import { SkillFileCache, type ParsedSkillFile } from './skills-cache.js';

export interface SkillProblem {
  file: string;
  reason: string;
}

export interface LoadSkillsResult {
  skills: Skill[];
  /** Files that looked like skills but could not be loaded, with the reason. */
  problems: SkillProblem[];
}

export interface LoadSkillsOptions {
  /**
   * Fail on the first problem instead of loading the rest.
   * @default false
   */
  strict?: boolean;
  /**
   * Folder where parsed skill files are kept between processes (each under its size and times), so that
   * an unchanged folder is not parsed again. The router passes `<stateDir>/models`.
   * @default no cache
   */
  cacheDir?: string;
}

const SKILL_FILE = 'SKILL.md';
const SKIPPED_DIRECTORIES = new Set(['node_modules', '.git']);

/**
 * Discovers skills in a folder, recursively, in either layout: `<name>/SKILL.md` (Claude Code skills;
 * other files in that folder are the skill's own material) or flat `*.md` files with YAML front matter
 * (`name`, `description`, optional `examples`, `patterns`, `category`, `confidence_threshold`,
 * `margin_threshold`). Files without front matter
 * are not skills and are skipped silently.
 */
export function loadSkills(directory: string, options: LoadSkillsOptions = {}): LoadSkillsResult {
  const root = resolve(directory);
  let rootStat;
  try {
    rootStat = statSync(root);
  } catch {
    throw new SwitchboardError('SKILLS_INVALID', `skills folder ${directory} does not exist`, {
      hint: 'pass --skills with a folder of SKILL.md or *.md files with front matter',
    });
  }
  if (!rootStat.isDirectory()) {
    throw new SwitchboardError('SKILLS_INVALID', `skills path ${directory} is not a folder`, {
      hint: 'pass --skills with a folder of SKILL.md or *.md files with front matter',
    });
  }

  const problems: SkillProblem[] = [];
  const byName = new Map<string, Skill>();
  const cache = options.cacheDir === undefined ? undefined : new SkillFileCache(options.cacheDir, root);
  for (const file of findSkillFiles(root)) {
    const shown = relative(process.cwd(), file) || file;
    const parsed = readSkillFile(file, cache);
    if (parsed === null) continue;
    if ('reason' in parsed) {
      problems.push({ file: shown, reason: parsed.reason });
      continue;
    }
    const existing = byName.get(parsed.name);
    if (existing !== undefined) {
      problems.push({
        file: shown,
        reason: `duplicate skill name "${parsed.name}" (already defined in ${relative(process.cwd(), existing.file) || existing.file})`,
      });
      continue;
    }
    byName.set(parsed.name, parsed);
  }
  cache?.save();

  if (options.strict === true && problems.length > 0) {
    const first = problems[0] as SkillProblem;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    throw new SwitchboardError('SKILLS_INVALID', `${first.file}: ${first.reason}${more}`, {
      hint: 'fix the skill files, or drop --strict to load the valid ones',
      details: { problems },
    });
  }
  const skills = [...byName.values()];
  if (skills.length === 0) {
    const why = problems.length > 0 ? `; ${problems.length} file(s) failed: ${problems[0]?.reason}` : '';
    throw new SwitchboardError('SKILLS_INVALID', `no skills found in ${directory}${why}`, {
      hint: 'each skill is a SKILL.md or *.md file starting with YAML front matter holding name and description',
      details: { problems },
    });
  }
  return { skills, problems };
}

/**
 * A stable order that does not depend on the locale. Not `localeCompare`: its first call sets up ICU's
 * collator, which costs more than the rest of loading a skills folder (about 13 ms).
 */
function byCodeUnits(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Markdown files that may be skills, in a stable (sorted) order. */
function findSkillFiles(directory: string): string[] {
  const entries = readdirSync(directory, { withFileTypes: true }).sort((a, b) => byCodeUnits(a.name, b.name));
  if (entries.some((entry) => entry.isFile() && entry.name === SKILL_FILE)) {
    return [join(directory, SKILL_FILE)];
  }
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (entry.name.startsWith('.') || SKIPPED_DIRECTORIES.has(entry.name)) continue;
      files.push(...findSkillFiles(path));
    } else if (entry.isFile() && entry.name.toLowerCase().endsWith('.md')) {
      files.push(path);
    }
  }
  return files;
}

const FRONT_MATTER_START = /^\uFEFF?---[ \t]*\r?\n/;
/** The line that closes the front matter (Jekyll's `---`, or YAML's document end `...`). */
const FRONT_MATTER_END = /^(?:---|\.\.\.)[ \t]*\r?$/m;

/**
 * The YAML between the opening `---` line and the closing one (to the end of the file when it is never
 * closed). Only the front matter is parsed; the body after it is the skill's own text.
 */
function frontMatterText(content: string): string {
  const rest = content.replace(FRONT_MATTER_START, '');
  const end = FRONT_MATTER_END.exec(rest);
  return end === null ? rest : rest.slice(0, end.index);
}

/** The markdown after the closing front-matter line, trimmed; empty when there is none. */
function bodyText(content: string): string {
  const rest = content.replace(FRONT_MATTER_START, '');
  const end = FRONT_MATTER_END.exec(rest);
  return end === null ? '' : rest.slice(end.index + end[0].length).trim();
}

function readSkillFile(file: string, cache: SkillFileCache | undefined): ParsedSkillFile {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    return { reason: `cannot read file (${error instanceof Error ? error.message : String(error)})` };
  }
  if (!FRONT_MATTER_START.test(content)) return null;
  return cache === undefined ? parseSkillFile(file, content) : cache.parse(file, content, parseSkillFile);
}

function parseSkillFile(file: string, content: string): ParsedSkillFile {
  let data: unknown;
  try {
    // The same YAML parser as the config: precise syntax errors. An empty front matter is no mapping.
    const { parse } = loadYaml();
    data = parse(frontMatterText(content)) ?? {};
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return { reason: `front matter is not valid YAML: ${message}` };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { reason: 'front matter must be a YAML mapping with name and description' };
  }
  const fields = data as Record<string, unknown>;
  const name = fields['name'];
  const description = fields['description'];
  if (typeof name !== 'string' || name.trim() === '') {
    return { reason: 'front matter has no "name"' };
  }
  if (name.trim() === NONE) {
    return { reason: `"${NONE}" is reserved for "no skill"; rename the skill` };
  }
  if (typeof description !== 'string' || description.trim() === '') {
    return { reason: 'front matter has no "description"' };
  }
  const examples = stringList(fields['examples'], 'examples');
  if (!Array.isArray(examples)) return examples;
  const patterns = stringList(fields['patterns'], 'patterns');
  if (!Array.isArray(patterns)) return patterns;
  for (const pattern of patterns) {
    const problem = regexProblem(pattern);
    if (problem !== undefined)
      return { reason: `pattern ${JSON.stringify(pattern)} is not a valid regex: ${problem}` };
  }
  const category = fields['category'];
  if (category !== undefined && typeof category !== 'string') {
    return { reason: '"category" must be a string' };
  }
  const thresholds = frontMatterThresholds(fields);
  if ('reason' in thresholds) return thresholds;
  const skill: Skill = { name: name.trim(), description: description.trim(), examples, patterns, file };
  if (typeof category === 'string') skill.category = category;
  const body = bodyText(content);
  if (body !== '') skill.body = body;
  if (Object.keys(thresholds).length > 0) skill.thresholds = thresholds;
  return skill;
}

/** `confidence_threshold` and `margin_threshold` in front matter: each optional, a number in [0, 1]. */
function frontMatterThresholds(fields: Record<string, unknown>): SkillThresholds | { reason: string } {
  const thresholds: SkillThresholds = {};
  for (const [field, key] of [
    ['confidence_threshold', 'confidenceThreshold'],
    ['margin_threshold', 'marginThreshold'],
  ] as const) {
    const value = fields[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
      return { reason: `"${field}" must be a number between 0 and 1, got ${JSON.stringify(value)}` };
    }
    thresholds[key] = value;
  }
  return thresholds;
}

function stringList(value: unknown, field: string): string[] | { reason: string } {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
  return { reason: `"${field}" must be a list of strings` };
}

/** Returns why a pattern does not compile, or undefined when it does. */
export function regexProblem(pattern: string): string | undefined {
  try {
    compilePattern(pattern);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * Compiles a rule pattern: either a bare regex source (matched case-insensitively) or `/source/flags`,
 * for RE2 (`linearRegex`): a rule never stalls the router, whatever the request's text.
 */
export function compilePattern(pattern: string): LinearRegex {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  if (literal !== null) {
    const flags = literal[2] ?? '';
    return linearRegex(literal[1] ?? '', flags.includes('i') ? flags : `${flags}i`);
  }
  return linearRegex(pattern, 'i');
}

/** A short stable hash of everything about a skill set that affects routing. */
export function hashSkills(skills: readonly Skill[]): string {
  const hash = createHash('sha256');
  for (const skill of [...skills].sort((a, b) => byCodeUnits(a.name, b.name))) {
    hash.update(
      JSON.stringify([
        skill.name,
        skill.description,
        skill.examples,
        skill.patterns,
        skill.category ?? null,
        skill.body ?? '',
      ]),
    );
    hash.update('\n');
  }
  return hash.digest('hex').slice(0, 16);
}
