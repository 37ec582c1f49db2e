import { relative, resolve } from 'node:path';
import { isSwitchboardError } from '../../core/errors.js';
import { NONE, type LabelledExample, type RouteMode, type Skill } from '../../core/route-types.js';
import { currentHash, readExamplesFile, skillHashes, skillSetHash } from './examples-file.js';

/** What a router takes from a skills folder's `.switchboard-examples.jsonl`. */
export interface PrimedTraining {
  /** The rows written for the skills as they are now, as labelled examples (near misses as `none`). */
  examples: LabelledExample[];
  /** Said once for the router: ignored rows, and in `hybrid` mode skills nothing was primed for. */
  warnings: string[];
  /** The examples file, as a user in the current folder would type it ('' when it could not be read). */
  file: string;
}

const LISTED_SKILLS = 5;

/**
 * The primed examples a router trains on besides the skills' own: rows whose hash is the skill's
 * current content hash. Rows for an edited or removed skill are ignored with a warning naming
 * `route prime`, which writes them again. In `hybrid` mode, skills with neither `examples:` nor
 * primed rows are named once, since the LLM then decides most of their requests.
 */
export function primedTraining(
  skillsDirectory: string,
  skills: readonly Skill[],
  mode: RouteMode,
): PrimedTraining {
  const command = `switchboard route prime --skills ${shownPath(skillsDirectory)}`;
  const warnings: string[] = [];
  const examples: LabelledExample[] = [];
  let content;
  try {
    content = readExamplesFile(skillsDirectory);
  } catch (error) {
    // Routing goes on without the file rather than failing every request.
    warnings.push(isSwitchboardError(error) ? error.message : String(error));
    content = { file: '', rows: [], malformedLines: [] };
  }
  const shown = shownPath(content.file);
  if (content.malformedLines.length > 0) {
    warnings.push(
      `${shown}: ignored line(s) ${content.malformedLines.join(', ')}, which are not {"skill", "hash", "text"} rows`,
    );
  }
  const primed = new Set<string>();
  if (content.rows.length > 0) {
    const hashes = skillHashes(skills);
    const setHash = skillSetHash(hashes);
    const stale = new Set<string>();
    for (const row of content.rows) {
      if (row.hash === currentHash(row.skill, hashes, setHash)) {
        examples.push({ text: row.text, expected: row.skill });
        primed.add(row.skill);
      } else {
        stale.add(row.skill);
      }
    }
    if (stale.size > 0) {
      warnings.push(
        `${shown}: ignored the primed examples of ${listed([...stale].map((skill) => (skill === NONE ? 'the near misses' : skill)))}, written for an earlier version of the skills; \`${command}\` writes them again`,
      );
    }
  }
  if (mode === 'hybrid') {
    const bare = skills.filter((skill) => skill.examples.length === 0 && !primed.has(skill.name));
    if (bare.length > 0) {
      warnings.push(
        `${bare.length} of ${skills.length} skill(s) have no examples (${listed(bare.map((skill) => skill.name))}), so the LLM decides most of their requests; \`${command}\` has it write examples once for the local model`,
      );
    }
  }
  return { examples, warnings, file: content.file === '' ? '' : shown };
}

/** A path as a user in this folder would type it. */
function shownPath(path: string): string {
  const shown = relative(process.cwd(), resolve(path));
  return shown === '' || shown.startsWith('..') ? resolve(path) : shown;
}

function listed(names: readonly string[]): string {
  const head = names.slice(0, LISTED_SKILLS).join(', ');
  return names.length > LISTED_SKILLS ? `${head} and ${names.length - LISTED_SKILLS} more` : head;
}
