import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Skill } from '../core/route-types.js';
import { writeFileAtomically } from '../store/atomic-file.js';

/** What reading one file gave: a skill, why it is not a valid one, or `null` when it is no skill at all. */
export type ParsedSkillFile = Skill | { reason: string } | null;

/** Bumped when what is stored per file changes meaning (2: skills carry their body; 3: and their own thresholds). */
const CACHE_VERSION = 3;

interface CacheFile {
  version: number;
  files: Record<string, { hash: string; parsed: ParsedSkillFile }>;
}

/**
 * Parsed skill files kept between processes, each under the hash of its content, so that a CLI call
 * routing with an unchanged folder neither parses YAML nor loads the YAML library (a fifth of
 * `switchboard route`'s own start-up). Reading and hashing a skill file costs microseconds; content
 * rather than file times decides, because times can stay the same across a quick edit. The cache is
 * an optimisation only: unreadable or corrupt, it is ignored and rewritten.
 */
export class SkillFileCache {
  private readonly file: string;
  private readonly entries: CacheFile['files'];
  private readonly seen = new Set<string>();
  private changed = false;

  constructor(cacheDir: string, root: string) {
    const key = createHash('sha256').update(root).digest('hex').slice(0, 16);
    this.file = join(cacheDir, `skills-${key}.json`);
    this.entries = readEntries(this.file);
  }

  /** The file's parsed form: from the cache when its content is unchanged, else from `parse`. */
  parse(
    path: string,
    content: string,
    parse: (path: string, content: string) => ParsedSkillFile,
  ): ParsedSkillFile {
    this.seen.add(path);
    const hash = createHash('sha256').update(content).digest('base64url');
    const cached = this.entries[path];
    if (cached?.hash === hash) return cached.parsed;
    const parsed = parse(path, content);
    this.entries[path] = { hash, parsed };
    this.changed = true;
    return parsed;
  }

  /** Writes the cache when something changed, dropping files that are gone. Failures are ignored. */
  save(): void {
    for (const path of Object.keys(this.entries)) {
      if (!this.seen.has(path)) {
        delete this.entries[path];
        this.changed = true;
      }
    }
    if (!this.changed) return;
    try {
      mkdirSync(join(this.file, '..'), { recursive: true });
      writeFileAtomically(this.file, JSON.stringify({ version: CACHE_VERSION, files: this.entries }));
    } catch {
      // A read-only state folder only costs the next process a parse.
    }
  }
}

function readEntries(file: string): CacheFile['files'] {
  try {
    const data = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheFile>;
    if (data.version === CACHE_VERSION && typeof data.files === 'object' && data.files !== null) {
      return data.files;
    }
  } catch {
    // Missing or corrupt: start empty.
  }
  return {};
}
