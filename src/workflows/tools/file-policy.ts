import { realpathSync } from 'node:fs';
import { lstat, mkdir, readdir, realpath, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileRefusal } from '../../confinement/file-access.js';
import { processRunning } from '../../confinement/server-tokens.js';
import { temporaryWriter, writeFileAtomically } from '../../store/atomic-file.js';

/** A path the file tools may read: where it really is, and how the model names it. */
export type ResolvedPath = { ok: true; real: string; relative: string } | { ok: false; reason: string };

/** What a write did: the file as the model names it, and whether it is new. */
export type WriteOutcome = { ok: true; relative: string; created: boolean } | { ok: false; reason: string };

/**
 * Where the file tools of a step may read and write: inside its working directory, where the path really leads
 * (symlinks followed), never a file the one deny list names (`fileRefusal`: `.env` files, git's folder,
 * credential files, Switchboard's state folders). A working directory is the caller's own folder, not a worktree, so both may lie in it.
 */
export class FilePolicy {
  /** The working directory, symlinks resolved. */
  readonly root: string;
  /** Folders never read or written (state folders), as they really are; a command's sandbox hides them too. */
  readonly hidden: readonly string[];

  /** @param hidden folders never read (state folders); those that do not exist are left out */
  constructor(workingDirectory: string, hidden: readonly string[]) {
    this.root = realpathSync(workingDirectory);
    this.hidden = hidden.flatMap((folder) => {
      try {
        return [realpathSync(resolve(workingDirectory, folder))];
      } catch {
        return [];
      }
    });
  }

  /** The path the model gave (relative to the working directory, or absolute), checked where it leads. */
  async resolve(path: unknown): Promise<ResolvedPath> {
    if (typeof path !== 'string' || path.trim() === '') {
      return { ok: false, reason: 'give "path": a file or folder in the working directory' };
    }
    const written = resolve(this.root, path);
    const refusal = this.refusal(written, path);
    if (refusal !== undefined) return { ok: false, reason: refusal };
    return this.leadingTo(path, await realpath(written).catch(() => undefined));
  }

  /** The checks after the links are followed: a symlink inside may lead anywhere, so where it leads is checked too. */
  private leadingTo(path: string, real: string | undefined): ResolvedPath {
    if (real === undefined)
      return { ok: false, reason: `${path}: no such file or folder in the working directory` };
    const leads = this.refusal(real, path);
    if (leads !== undefined) return { ok: false, reason: leads };
    return { ok: true, real, relative: this.relativeName(real) };
  }

  /** `resolve` for a caller that cannot wait (a workflow's templates read as it loads): the same checks. */
  resolveSync(path: string): ResolvedPath {
    const written = resolve(this.root, path);
    const refusal = this.refusal(written, path);
    if (refusal !== undefined) return { ok: false, reason: refusal };
    let real: string | undefined;
    try {
      real = realpathSync(written);
    } catch {
      real = undefined;
    }
    return this.leadingTo(path, real);
  }

  /**
   * Writes `content` to the file the model named, whole or not at all (`writeFileAtomically`: a
   * temporary file beside it, renamed over it), creating the folders it needs: a step killed in the
   * middle leaves the old file or the new one, never half of one. The same rule as reading decides
   * where: inside the working directory where the path really leads (a link followed, and a link to
   * nowhere refused), never a file the deny list names.
   */
  async write(path: unknown, content: string): Promise<WriteOutcome> {
    const target = await this.resolveForWrite(path);
    if (!target.ok) return target;
    const asWritten = String(path);
    try {
      await mkdir(dirname(target.real), { recursive: true });
      // A folder swapped for a link after the check would send the rename elsewhere: check where it leads now.
      const folder = await realpath(dirname(target.real));
      const moved = this.refusal(join(folder, basename(target.real)), asWritten);
      if (moved !== undefined) return { ok: false, reason: moved };
      if (folder !== dirname(target.real)) {
        return { ok: false, reason: `${asWritten}: changed while it was being written; try again` };
      }
      writeFileAtomically(target.real, content);
      await removeAbandonedWrites(target.real);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return {
        ok: false,
        reason: `${target.relative}: cannot be written${code === undefined ? '' : ` (${code})`}`,
      };
    }
    return { ok: true, relative: target.relative, created: !target.exists };
  }

  /** Where a write of `path` lands: the file, or where a link there leads; the missing folders' names checked too. */
  private async resolveForWrite(
    path: unknown,
  ): Promise<{ ok: true; real: string; relative: string; exists: boolean } | { ok: false; reason: string }> {
    if (typeof path !== 'string' || path.trim() === '') {
      return { ok: false, reason: 'give "path": a file in the working directory' };
    }
    const written = resolve(this.root, path);
    const refusal = this.refusal(written, path);
    if (refusal !== undefined) return { ok: false, reason: refusal };
    const info = await lstat(written).catch(() => undefined);
    let real: string;
    if (info !== undefined) {
      if (info.isDirectory()) return { ok: false, reason: `${path} is a folder; name a file` };
      try {
        real = await realpath(written);
      } catch {
        return { ok: false, reason: `${path}: a link to nowhere; write the file it should name` };
      }
    } else {
      // The nearest folder that exists, where it really is, and the names still to create below it.
      let folder = dirname(written);
      const missing = [basename(written)];
      for (;;) {
        const found = await realpath(folder).catch(() => undefined);
        if (found !== undefined) {
          real = join(found, ...missing);
          break;
        }
        missing.unshift(basename(folder));
        folder = dirname(folder);
      }
    }
    const leads = this.refusal(real, path);
    if (leads !== undefined) return { ok: false, reason: leads };
    const kind = info === undefined ? undefined : await lstat(real).catch(() => undefined);
    if (kind !== undefined && !kind.isFile()) return { ok: false, reason: `${path} is not a regular file` };
    return { ok: true, real, relative: this.relativeName(real), exists: info !== undefined };
  }

  /** Whether an entry met while walking a folder (already inside) may be shown: not a secret. */
  shows(absolute: string): boolean {
    return this.refusal(absolute, absolute) === undefined;
  }

  /** How the model names a path inside: relative to the working directory, `.` for the directory itself. */
  relativeName(absolute: string): string {
    const name = relative(this.root, absolute);
    return name === '' ? '.' : name.split(sep).join('/');
  }

  /**
   * Why `absolute` may not be read, or undefined: outside the working directory, or named by the deny
   * list (`fileRefusal`). Also asked of the path an opened descriptor leads to (`/proc/self/fd/N`),
   * so a folder swapped for a symlink between `resolve` and `open` leads nowhere it should not.
   */
  refusal(absolute: string, asWritten: string): string | undefined {
    const inside = relative(this.root, absolute);
    if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      return `${asWritten}: outside the working directory (${this.root}); the file tools read and write only inside it`;
    }
    return fileRefusal(absolute, { root: this.root, hidden: this.hidden, named: asWritten });
  }
}

/**
 * Removes the temporary files of earlier writes of `file` whose process is gone (`writeFileAtomically`
 * names them `.<name>.<pid>.<8 hex>.tmp`): a step killed in the middle of a write leaves one beside
 * the file, half written, which the model's next `list_files` would show and a resumed step would
 * find. A process still running may be writing: its file stays.
 */
async function removeAbandonedWrites(file: string): Promise<void> {
  const name = basename(file);
  const entries = await readdir(dirname(file)).catch(() => [] as string[]);
  for (const entry of entries) {
    const writer = temporaryWriter(entry, name);
    if (writer === undefined || processRunning(writer)) continue;
    await rm(join(dirname(file), entry), { force: true });
  }
}
