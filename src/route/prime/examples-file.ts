import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../../core/errors.js';
import { NONE, type Skill } from '../../core/route-types.js';
import { writeFileAtomically } from '../../store/atomic-file.js';

/** The file `switchboard route prime` writes beside the skills, and every router trains on. */
export const EXAMPLES_FILE = '.switchboard-examples.jsonl';

/**
 * One primed example: a request the LLM wrote for `skill` (or a near miss, skill `none`) while the
 * skill file had the content `hash` (sha256, hex; for near misses the hash of the whole skill set).
 */
export interface PrimedRow {
  skill: string;
  hash: string;
  text: string;
}

export function examplesFilePath(skillsDirectory: string): string {
  return join(skillsDirectory, EXAMPLES_FILE);
}

/** sha256 (hex) of a skill file's bytes, as `sha256sum` prints it: what a primed row was written for. */
export function skillFileHash(skill: Pick<Skill, 'file'>): string {
  return createHash('sha256').update(readFileSync(skill.file)).digest('hex');
}

/** Each skill's content hash, by name. */
export function skillHashes(skills: readonly Skill[]): Map<string, string> {
  return new Map(skills.map((skill) => [skill.name, skillFileHash(skill)]));
}

/**
 * The hash near misses are written for: every skill's name and content hash. A request outside the
 * skills may fall inside a skill that is added or edited later, so any change makes them stale.
 */
export function skillSetHash(hashes: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256');
  for (const name of [...hashes.keys()].sort(byCodeUnits)) hash.update(`${name}\u0000${hashes.get(name)}\n`);
  return hash.digest('hex');
}

/** The hash a row of `skill` must carry to be current; undefined for a skill that no longer exists. */
export function currentHash(
  skill: string,
  hashes: ReadonlyMap<string, string>,
  setHash: string,
): string | undefined {
  return skill === NONE ? setHash : hashes.get(skill);
}

/** What an examples file holds: its rows, and the (1-based) lines that are not rows. */
export interface ExamplesFileContent {
  file: string;
  rows: PrimedRow[];
  malformedLines: number[];
}

/**
 * The rows of a skills folder's examples file; none when there is no file. Lines that are not a JSON
 * object with string `skill`, `hash` and `text` are reported, not dropped silently: the file is meant
 * to be edited by hand.
 */
export function readExamplesFile(skillsDirectory: string): ExamplesFileContent {
  const file = examplesFilePath(skillsDirectory);
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { file, rows: [], malformedLines: [] };
    throw new SwitchboardError('DATASET_INVALID', `cannot read ${file}: ${(error as Error).message}`, {
      hint: 'check the file permissions, or delete the file and run `switchboard route prime` again',
    });
  }
  const rows: PrimedRow[] = [];
  const malformedLines: number[] = [];
  for (const [index, line] of content.split('\n').entries()) {
    if (line.trim() === '') continue;
    const row = parseRow(line);
    if (row === undefined) malformedLines.push(index + 1);
    else rows.push(row);
  }
  return { file, rows, malformedLines };
}

function parseRow(line: string): PrimedRow | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { skill, hash, text } = value as Record<string, unknown>;
  if (typeof skill !== 'string' || typeof hash !== 'string' || typeof text !== 'string') return undefined;
  return { skill, hash, text };
}

/**
 * Writes the rows whole or not at all, sorted (skills by name, near misses last, texts in order) and
 * one key order per row, so the file diffs well under version control and the same rows always make
 * the same bytes.
 */
export function writeExamplesFile(skillsDirectory: string, rows: readonly PrimedRow[]): string {
  const file = examplesFilePath(skillsDirectory);
  const sorted = [...rows].sort(
    (left, right) =>
      Number(left.skill === NONE) - Number(right.skill === NONE) ||
      byCodeUnits(left.skill, right.skill) ||
      byCodeUnits(left.text, right.text),
  );
  const lines = sorted.map((row) => JSON.stringify({ skill: row.skill, hash: row.hash, text: row.text }));
  try {
    writeFileAtomically(file, lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  } catch (error) {
    throw new SwitchboardError('INVALID_INPUT', `cannot write ${file}: ${(error as Error).message}`, {
      hint: 'make the skills folder writable and run `switchboard route prime` again',
    });
  }
  return file;
}

function byCodeUnits(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
