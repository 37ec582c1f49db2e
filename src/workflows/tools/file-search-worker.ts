// Worker-thread entry for `search_files`: runs the model's regular expression over the files the
// parent chose, so that a pattern that backtracks without end stalls only this thread, which the parent
// ends at its time limit. The pattern runs in RE2 (linear time, `core/linear-regex`), loaded by URL with
// this file's own extension, so that it also runs straight from the sources.
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type * as LinearRegexModule from '../../core/linear-regex.js';

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const { linearRegex } = (await import(
  new URL(`../../core/linear-regex${extension}`, import.meta.url).href
)) as typeof LinearRegexModule;

export interface SearchJob {
  files: { path: string; name: string }[];
  pattern: string;
  ignoreCase: boolean;
  maxMatches: number;
  maxLineChars: number;
  maxFileBytes: number;
}

export type SearchAnswer =
  { ok: true; lines: string[]; more: boolean; skipped: number } | { ok: false; error: string };

function search(job: SearchJob): SearchAnswer {
  let expression: LinearRegexModule.LinearRegex;
  try {
    expression = linearRegex(job.pattern, job.ignoreCase ? 'i' : '');
  } catch (error) {
    return { ok: false, error: `pattern ${JSON.stringify(job.pattern)}: ${(error as Error).message}` };
  }
  const lines: string[] = [];
  let skipped = 0;
  for (const file of job.files) {
    const bytes = readChecked(file.path, job.maxFileBytes);
    if (bytes === undefined || bytes.subarray(0, 8192).includes(0)) {
      skipped++;
      continue;
    }
    const text = bytes.toString('utf8').split('\n');
    for (const [index, line] of text.entries()) {
      if (!expression.test(line)) continue;
      if (lines.length >= job.maxMatches) return { ok: true, lines, more: true, skipped };
      const shown = line.length > job.maxLineChars ? `${line.slice(0, job.maxLineChars)}…` : line;
      lines.push(`${file.name}:${index + 1}: ${shown}`);
    }
  }
  return { ok: true, lines, more: false, skipped };
}

/**
 * The file at `path` (a path the parent checked, symlinks resolved) when it still is that regular file
 * and no larger than `maxBytes`: opened without blocking on a FIFO, its descriptor must lead to `path`
 * itself (a folder swapped for a symlink meanwhile leads elsewhere), and its size is read before it is.
 */
function readChecked(path: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    let real: string;
    try {
      real = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      real = realpathSync(path);
    }
    if (real !== path) return undefined;
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > maxBytes) return undefined;
    const buffer = Buffer.alloc(info.size);
    const read = readSync(fd, buffer, 0, info.size, 0);
    return buffer.subarray(0, read);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

parentPort?.postMessage(search(workerData as SearchJob));
