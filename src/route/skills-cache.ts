import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Skill } from '../core/route-types.js';
import { writeFileAtomically } from '../store/atomic-file.js';

/** What reading one file gave: a skill, why it is not a valid one, or `null` when it is no skill at all. */
export type ParsedSkillFile = Skill | { reason: string } | null;

/** Bumped when what is stored per file changes meaning. */
const CACHE_VERSION = 1;

interface CacheFile {
  version: number;
  files: Record<string, { stamp: string; parsed: ParsedSkillFile }>;
}

/**
 * Parsed skill files kept between processes, each under its size, modification and change times, so
 * that a CLI call routing with an unchanged folder neither parses YAML nor loads the YAML library (a
 * third of `switchboard route`'s own start-up). Any change to a file's content changes its change time
 * (ctime cannot be set back by a program), so a stale entry is never used. The cache is an
 * optimisation only: unreadable or corrupt, it is ignored and rewritten.
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

  /** The file's parsed form: from the cache when the file is unchanged, else from `parse`. */
  parse(path: string, parse: (path: string) => ParsedSkillFile): ParsedSkillFile {
    this.seen.add(path);
    const stamp = stampOf(path);
    const cached = this.entries[path];
    if (stamp !== undefined && cached?.stamp === stamp) return cached.parsed;
    const parsed = parse(path);
    if (stamp !== undefined) {
      this.entries[path] = { stamp, parsed };
      this.changed = true;
    }
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

function stampOf(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch {
    return undefined;
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
