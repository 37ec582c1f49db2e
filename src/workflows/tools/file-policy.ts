import { realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileRefusal } from '../../confinement/file-access.js';

/** A path the file tools may read: where it really is, and how the model names it. */
export type ResolvedPath = { ok: true; real: string; relative: string } | { ok: false; reason: string };

/**
 * Where the file tools of a step may read: inside its working directory, where the path really leads
 * (symlinks followed), never a file the one deny list names (`fileRefusal`: `.env` files, git's folder,
 * credential files, Switchboard's state folders). A working directory is the caller's own folder, not a worktree, so both may lie in it.
 */
export class FilePolicy {
  /** The working directory, symlinks resolved. */
  readonly root: string;
  private readonly hidden: string[];

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
      return `${asWritten}: outside the working directory (${this.root}); the file tools read only inside it`;
    }
    return fileRefusal(absolute, { root: this.root, hidden: this.hidden, named: asWritten });
  }
}
