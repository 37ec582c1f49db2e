import type { Dirent } from 'node:fs';
import { constants } from 'node:fs';
import { open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { join, matchesGlob } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { FileToolName } from '../tool-names.js';
import type { FilePolicy } from './file-policy.js';
import type { SearchAnswer, SearchJob } from './file-search-worker.js';
import { commandTool } from './command-tool.js';
import { boundedResult, toolError, type StepTool, type ToolOutcome } from './step-tool.js';

/** Lines `read_file` returns when the call says none. */
const DEFAULT_READ_LINES = 2_000;
/** A longer line is cut: minified code would otherwise fill the answer with one line. */
const MAX_LINE_CHARS = 2_000;
/** Files above this are read in part only (`offset`/`limit` still work within it). */
const MAX_READ_BYTES = 5 * 1024 * 1024;
/** Paths `list_files` returns at most. */
const MAX_LISTED = 1_000;
/** Entries a walk visits at most, whatever it finds: a huge tree costs a bounded time. */
const MAX_VISITED = 50_000;
/** Matching lines `search_files` returns at most. */
const MAX_MATCHES = 200;
/** Files `search_files` reads no further than. */
const MAX_SEARCHED_BYTES = 2 * 1024 * 1024;
/** How long a search may run before its thread is ended (a pattern that backtracks without end). */
const SEARCH_TIMEOUT_MS = 10_000;
/** How long a walk (`list_files`, the files `search_files` reads) may take before it stops with what it found. */
const WALK_TIMEOUT_MS = 10_000;
/** A glob longer than this is refused; so are brace ranges (`{1..100000}`) and more than 4 brace groups. */
const MAX_GLOB_CHARS = 300;
/** The longest file `write_file` and `edit_file` write, in characters. */
const MAX_WRITE_CHARS = 10 * 1024 * 1024;
/** Folders no walk enters: version control and installed dependencies, never what a question is about. */
const SKIPPED_FOLDERS = new Set(['.git', 'node_modules']);

const pathProperty = { type: 'string', description: 'Relative to the working directory.' };

/**
 * The file tools a step on an API provider runs itself, held to its working directory by `policy`:
 * `read_file`, `list_files` (glob) and `search_files` (regular expression), each with a bounded
 * answer; `write_file` and `edit_file` (an exact string replaced, as Claude Code's Edit), which write
 * through the same policy, whole or not at all; and `run_command`, in the sandbox (`commandTool`).
 */
export function fileTools(
  policy: FilePolicy,
  { network = false }: { network?: boolean } = {},
): Record<FileToolName, StepTool> {
  return {
    read_file: {
      definition: {
        name: 'read_file',
        description: `Reads a text file in the working directory: up to ${DEFAULT_READ_LINES} lines from "offset" (the first line is 1), or "limit" lines.`,
        inputSchema: {
          type: 'object',
          properties: {
            path: pathProperty,
            offset: { type: 'integer', minimum: 1, description: 'The first line to read. Default 1.' },
            limit: {
              type: 'integer',
              minimum: 1,
              description: `How many lines. Default ${DEFAULT_READ_LINES}.`,
            },
          },
          required: ['path'],
        },
      },
      run: (input) => readFileTool(policy, input),
    },
    list_files: {
      definition: {
        name: 'list_files',
        description: `Lists the files in the working directory (or in "path") whose path matches a glob such as "**/*.ts" or "docs/*.md", sorted, at most ${MAX_LISTED}. .git and node_modules are left out.`,
        inputSchema: {
          type: 'object',
          properties: {
            pattern: { type: 'string', description: 'A glob on paths relative to "path". Default "**/*".' },
            path: { ...pathProperty, description: 'The folder to list. Default: the working directory.' },
          },
        },
      },
      run: (input, signal) => listFilesTool(policy, input, signal),
    },
    search_files: {
      definition: {
        name: 'search_files',
        description: `Searches the text files in the working directory (or in "path") for lines matching a JavaScript regular expression; answers "file:line: text", at most ${MAX_MATCHES} lines.`,
        inputSchema: {
          type: 'object',
          properties: {
            pattern: {
              type: 'string',
              description:
                'A regular expression (JavaScript syntax, run by RE2: no backreferences or lookaround).',
            },
            path: {
              ...pathProperty,
              description: 'A file or folder to search. Default: the working directory.',
            },
            glob: { type: 'string', description: 'Only files whose path matches this glob, e.g. "**/*.py".' },
            ignore_case: { type: 'boolean', description: 'Match without regard to letter case.' },
          },
          required: ['pattern'],
        },
      },
      run: (input, signal) => searchFilesTool(policy, input, signal),
    },
    write_file: {
      definition: {
        name: 'write_file',
        description:
          'Writes a file in the working directory: creates it (and the folders it needs) or replaces it whole with "content".',
        inputSchema: {
          type: 'object',
          properties: {
            path: pathProperty,
            content: { type: 'string', description: 'The whole text of the file.' },
          },
          required: ['path', 'content'],
        },
      },
      run: (input) => writeFileTool(policy, input),
    },
    edit_file: {
      definition: {
        name: 'edit_file',
        description:
          'Edits a file in the working directory: replaces the exact text "old_string" with "new_string". old_string must occur once (give more of the surrounding text to make it unique), or set "replace_all" to replace every occurrence. Read the file first: whitespace and indentation must match.',
        inputSchema: {
          type: 'object',
          properties: {
            path: pathProperty,
            old_string: { type: 'string', description: 'The exact text to replace.' },
            new_string: { type: 'string', description: 'The text to put in its place.' },
            replace_all: { type: 'boolean', description: 'Replace every occurrence. Default false.' },
          },
          required: ['path', 'old_string', 'new_string'],
        },
      },
      run: (input) => editFileTool(policy, input),
    },
    run_command: commandTool(policy, { network }),
  };
}

async function writeFileTool(policy: FilePolicy, input: Record<string, unknown>): Promise<ToolOutcome> {
  const content = input['content'];
  if (typeof content !== 'string') return toolError('give "content": the whole text of the file');
  if (content.length > MAX_WRITE_CHARS) {
    return toolError(`"content" is longer than ${MAX_WRITE_CHARS} characters; write a smaller file`);
  }
  const written = await policy.write(input['path'], content);
  if (!written.ok) return toolError(written.reason);
  const lines = content === '' ? 0 : content.split('\n').length - (content.endsWith('\n') ? 1 : 0);
  return { content: `${written.created ? 'created' : 'replaced'} ${written.relative} (${lines} lines)` };
}

async function editFileTool(policy: FilePolicy, input: Record<string, unknown>): Promise<ToolOutcome> {
  const oldString = input['old_string'];
  const newString = input['new_string'];
  if (typeof oldString !== 'string' || oldString === '') {
    return toolError('give "old_string": the exact text to replace (to write a whole file, use write_file)');
  }
  if (typeof newString !== 'string') return toolError('give "new_string": the text to put in its place');
  if (oldString === newString)
    return toolError('"old_string" and "new_string" are the same: nothing to change');
  const target = await policy.resolve(input['path']);
  if (!target.ok) return toolError(target.reason);
  // Read as read_file reads: no blocking on a FIFO, and only where the path was checked to lead.
  const read = await readChecked(policy, target, String(input['path']), MAX_WRITE_CHARS);
  if (!read.ok) return toolError(read.reason);
  if (read.size > MAX_WRITE_CHARS) return toolError(`${target.relative} is too large to edit here`);
  const text = read.bytes.toString('utf8');
  const count = text.split(oldString).length - 1;
  if (count === 0) {
    return toolError(
      `${target.relative}: "old_string" is not in the file; read it with read_file and copy the text exactly, whitespace included`,
    );
  }
  const replaceAll = input['replace_all'] === true;
  if (count > 1 && !replaceAll) {
    return toolError(
      `${target.relative}: "old_string" occurs ${count} times; give more of the text around it to make it unique, or set replace_all`,
    );
  }
  const at = text.indexOf(oldString);
  const updated = replaceAll
    ? text.split(oldString).join(newString)
    : text.slice(0, at) + newString + text.slice(at + oldString.length);
  const written = await policy.write(input['path'], updated);
  if (!written.ok) return toolError(written.reason);
  return { content: `edited ${written.relative}: ${replaceAll ? count : 1} replaced` };
}

async function readFileTool(policy: FilePolicy, input: Record<string, unknown>): Promise<ToolOutcome> {
  const target = await policy.resolve(input['path']);
  if (!target.ok) return toolError(target.reason);
  const offset = positiveInteger(input['offset']) ?? 1;
  const limit = positiveInteger(input['limit']) ?? DEFAULT_READ_LINES;
  const read = await readChecked(policy, target, String(input['path']), MAX_READ_BYTES);
  if (!read.ok) return toolError(read.reason);
  const { bytes, size } = read;
  if (bytes.subarray(0, 8192).includes(0)) return toolError(`${target.relative} is a binary file`);
  const lines = bytes.toString('utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  const shown = lines
    .slice(offset - 1, offset - 1 + limit)
    .map((line) => (line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line));
  const last = offset - 1 + shown.length;
  const notes: string[] = [];
  if (last < lines.length) {
    notes.push(`[lines ${offset}–${last} of ${lines.length}; read on with offset ${last + 1}]`);
  }
  if (size > MAX_READ_BYTES) notes.push(`[only the first ${MAX_READ_BYTES} bytes of ${size} are read]`);
  if (shown.length === 0 && lines.length > 0) {
    return toolError(`${target.relative} has ${lines.length} lines; offset ${offset} is past the end`);
  }
  return { content: boundedResult([...shown, ...notes].join('\n')) };
}

/**
 * A file's first `limit` bytes, read where it really is: opened first (without blocking on a FIFO),
 * then checked where the descriptor really leads, so a folder swapped for a symlink after `resolve`
 * cannot send the read outside. `size` is the whole file's.
 */
async function readChecked(
  policy: FilePolicy,
  target: { real: string; relative: string },
  asWritten: string,
  limit: number,
): Promise<{ ok: true; bytes: Buffer; size: number } | { ok: false; reason: string }> {
  let handle;
  try {
    handle = await open(target.real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return { ok: false, reason: `${target.relative}: cannot be opened` };
  }
  try {
    const moved = await openedElsewhere(policy, handle.fd, target.real, asWritten);
    if (moved !== undefined) return { ok: false, reason: moved };
    const info = await handle.stat();
    if (info.isDirectory())
      return { ok: false, reason: `${target.relative} is a folder; list it with list_files` };
    if (!info.isFile()) return { ok: false, reason: `${target.relative} is not a regular file` };
    const buffer = Buffer.alloc(Math.min(info.size, limit));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { ok: true, bytes: buffer.subarray(0, bytesRead), size: info.size };
  } finally {
    await handle.close();
  }
}

async function listFilesTool(
  policy: FilePolicy,
  input: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const folder = await policy.resolve(input['path'] ?? '.');
  if (!folder.ok) return toolError(folder.reason);
  const pattern = nonEmptyString(input['pattern']) ?? '**/*';
  const problem = globProblem(pattern);
  if (problem !== undefined) return toolError(problem);
  const found = await walk(policy, folder.real, (name) => matchesGlob(name, pattern), signal);
  if (found.files.length === 0) {
    return { content: `no file in ${folder.relative} matches ${pattern}` };
  }
  const names = found.files.map((file) => policy.relativeName(file.shown));
  if (found.more) names.push(`[more files match; the first ${MAX_LISTED} are shown: narrow the pattern]`);
  return { content: boundedResult(names.join('\n')) };
}

async function searchFilesTool(
  policy: FilePolicy,
  input: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const pattern = nonEmptyString(input['pattern']);
  if (pattern === undefined) return toolError('give "pattern": a JavaScript regular expression');
  const target = await policy.resolve(input['path'] ?? '.');
  if (!target.ok) return toolError(target.reason);
  const glob = nonEmptyString(input['glob']);
  const problem = glob === undefined ? undefined : globProblem(glob);
  if (problem !== undefined) return toolError(problem);
  const filter = (name: string) => glob === undefined || matchesGlob(name, glob);
  const info = await stat(target.real);
  if (!info.isDirectory() && !info.isFile()) return toolError(`${target.relative} is not a regular file`);
  const found = info.isDirectory()
    ? await walk(policy, target.real, filter, signal, MAX_VISITED)
    : { files: [{ shown: target.real, real: target.real }], more: false };
  const job: SearchJob = {
    // The worker reads each file only where its checked path leads (see the worker).
    files: found.files.map((file) => ({ path: file.real, name: policy.relativeName(file.shown) })),
    pattern,
    ignoreCase: input['ignore_case'] === true,
    maxMatches: MAX_MATCHES,
    maxLineChars: 300,
    maxFileBytes: MAX_SEARCHED_BYTES,
  };
  const answer = await searchInWorker(job, signal);
  if (!answer.ok) return toolError(answer.error);
  const notes: string[] = [];
  if (answer.more) notes.push(`[more lines match; the first ${MAX_MATCHES} are shown: narrow the search]`);
  if (found.more) notes.push('[the folder has more files than are searched: narrow "path" or "glob"]');
  if (answer.lines.length === 0) return { content: [`no line matches ${pattern}`, ...notes].join('\n') };
  return { content: boundedResult([...answer.lines, ...notes].join('\n')) };
}

/**
 * The files under `folder` whose name (relative to the working directory's view of `folder`) passes
 * `keep`, sorted; symlinked folders are not entered, secrets and `SKIPPED_FOLDERS` are left out.
 */
async function walk(
  policy: FilePolicy,
  folder: string,
  keep: (name: string) => boolean,
  signal: AbortSignal,
  maxFiles = MAX_LISTED,
): Promise<{ files: WalkedFile[]; more: boolean }> {
  const files: WalkedFile[] = [];
  const pending = [folder];
  const deadline = performance.now() + WALK_TIMEOUT_MS;
  let visited = 0;
  let more = false;
  const sorted = () => files.sort((a, b) => (a.shown < b.shown ? -1 : a.shown > b.shown ? 1 : 0));
  while (pending.length > 0) {
    if (signal.aborted || performance.now() > deadline) return { files: sorted(), more: true };
    const current = pending.shift() as string;
    let entries: Dirent[];
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (++visited > MAX_VISITED) return { files: sorted(), more: true };
      const path = join(current, entry.name);
      if (!policy.shows(path)) continue;
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) pending.push(path);
        continue;
      }
      if (!entry.isFile() && !entry.isSymbolicLink()) continue;
      if (!keep(relativeTo(folder, path))) continue;
      // A symlink is shown only when it leads to a file the tools may read, and read where it leads.
      const target = entry.isSymbolicLink() ? await policy.resolve(path) : { ok: true as const, real: path };
      if (!target.ok || (entry.isSymbolicLink() && !(await stat(target.real)).isFile())) continue;
      if (files.length >= maxFiles) {
        more = true;
        break;
      }
      files.push({ shown: path, real: target.real });
    }
    if (more) break;
  }
  return { files: sorted(), more };
}

/** A file a walk found: its path as the folder shows it, and where it leads (a symlink's target). */
interface WalkedFile {
  shown: string;
  real: string;
}

/**
 * Why a glob is refused, or undefined: Node's matcher expands braces up front, so `{1..100000}` or a
 * dozen `{a,b}` groups would hold the process for a minute on each name.
 */
export function globProblem(glob: string): string | undefined {
  if (glob.length > MAX_GLOB_CHARS) return `the glob is longer than ${MAX_GLOB_CHARS} characters; shorten it`;
  if (/\{[^}]*\.\.[^}]*\}/.test(glob))
    return 'brace ranges such as {1..9} are not supported in globs; list the names';
  if ((glob.match(/\{/g) ?? []).length > 4) return 'a glob may have at most 4 brace groups; narrow it';
  return undefined;
}

/**
 * Why an opened file may not be read although its path passed: the descriptor leads elsewhere than the
 * path that was checked (something changed the tree in between), or undefined.
 */
async function openedElsewhere(
  policy: FilePolicy,
  fd: number,
  checked: string,
  asWritten: string,
): Promise<string | undefined> {
  let real: string;
  try {
    real = await readlink(`/proc/self/fd/${fd}`);
  } catch {
    // No /proc (not Linux): what the path leads to now must still be what was checked.
    real = await realpath(checked).catch(() => '');
  }
  const refused = policy.refusal(real, asWritten);
  if (refused !== undefined) return refused;
  return real === checked ? undefined : `${asWritten}: changed while it was being read; try again`;
}

function relativeTo(folder: string, path: string): string {
  return path.slice(folder.length + 1);
}

/** Runs a search in a thread of its own, ended after `SEARCH_TIMEOUT_MS` or when the step is aborted. */
async function searchInWorker(job: SearchJob, signal: AbortSignal): Promise<SearchAnswer> {
  const { Worker: ThreadWorker } = await import('node:worker_threads');
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  const file = fileURLToPath(new URL(`./file-search-worker${extension}`, import.meta.url));
  const worker: Worker = new ThreadWorker(file, { workerData: job });
  return new Promise<SearchAnswer>((resolve) => {
    const finish = (answer: SearchAnswer) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
      void worker.terminate();
      resolve(answer);
    };
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          error: `the search took longer than ${SEARCH_TIMEOUT_MS / 1000} s and was stopped; use a simpler pattern or narrow "path"`,
        }),
      SEARCH_TIMEOUT_MS,
    );
    const aborted = () => finish({ ok: false, error: 'the step was stopped' });
    signal.addEventListener('abort', aborted, { once: true });
    worker.once('message', (answer: SearchAnswer) => finish(answer));
    worker.once('error', (error) => finish({ ok: false, error: `the search failed: ${error.message}` }));
  });
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}
