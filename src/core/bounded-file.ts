import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { SwitchboardError } from './errors.js';

/**
 * The most a YAML or JSON file read on a caller's behalf may hold (a workflow and its `!file` includes,
 * a task, a schema, a rules or scenario file): 2 MiB, a hundred times the largest real one.
 */
export const MAX_DATA_FILE_BYTES = 2 * 1024 * 1024;

export interface BoundedFileOptions {
  /** What the file is, for the message: "workflow file", "task file". */
  kind: string;
  /** @default MAX_DATA_FILE_BYTES */
  maxBytes?: number;
}

/**
 * Reads a file Switchboard was handed (by a flag, a workflow, an HTTP caller) without trusting what it
 * is: opened without blocking (a FIFO with no writer would hold the process, and SIGTERM with it), then
 * it must be a regular file (`/dev/zero` never ends), and no more than `maxBytes` are read (a file that
 * grows while it is read, or a `/proc` file that claims size 0, stops there). Every refusal is a
 * `FILE_REFUSED` error naming the file and why; a missing or unreadable file keeps its errno `cause`
 * (`ENOENT`, `EACCES`) for the caller's own message.
 */
export function readBoundedFile(
  path: string,
  { kind, maxBytes = MAX_DATA_FILE_BYTES }: BoundedFileOptions,
): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) {
      throw new SwitchboardError('FILE_REFUSED', `${kind} ${path} is ${whatItIs(info)}, not a regular file`, {
        hint: 'give the path of a file',
      });
    }
    if (info.size > maxBytes) throw tooLarge(kind, path, maxBytes);
    // One byte past the bound tells a file that grew since fstat (or a size-0 pseudo-file) from one that fits.
    let buffer = Buffer.alloc(Math.min(maxBytes + 1, info.size + 64 * 1024));
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) throw tooLarge(kind, path, maxBytes);
        const larger = Buffer.alloc(Math.min(maxBytes + 1, buffer.length * 2));
        buffer.copy(larger);
        buffer = larger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
    }
  } finally {
    closeSync(fd);
  }
}

function tooLarge(kind: string, path: string, maxBytes: number): SwitchboardError {
  return new SwitchboardError(
    'FILE_REFUSED',
    `${kind} ${path} is larger than ${maxBytes / (1024 * 1024)} MiB, the most Switchboard reads of such a file`,
    { hint: 'split it (a workflow can include files with !file, or call sub-workflows)' },
  );
}

function whatItIs(info: Stats): string {
  if (info.isDirectory()) return 'a folder';
  if (info.isFIFO()) return 'a named pipe (FIFO)';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSocket()) return 'a socket';
  return 'not a file';
}

/**
 * A YAML or JSON syntax error as a position and a kind, never the text around it: the `yaml` package's
 * messages quote the offending lines, and `JSON.parse`'s a slice of the input, and the file may be one
 * the caller cannot read (`/etc/shadow` named as a task file).
 */
export function syntaxErrorWithoutContent(error: unknown): string {
  if (!(error instanceof Error)) return 'a syntax error';
  const yaml = error as Error & { code?: unknown; linePos?: Array<{ line: number; col: number }> };
  if (typeof yaml.code === 'string' && /^[A-Z_]+$/.test(yaml.code)) {
    const at = yaml.linePos?.[0];
    const kind = yaml.code.toLowerCase().replaceAll('_', ' ');
    return at === undefined ? kind : `${kind} at line ${at.line}, column ${at.col}`;
  }
  // V8's JSON.parse: "Unexpected token 'x', \"…input…\" is not valid JSON" or "… at position 12 (line 1 column 13)".
  const position = /\bposition (\d+)(?: \(line (\d+) column (\d+)\))?/.exec(error.message);
  if (position !== null) {
    return position[2] === undefined
      ? `not valid JSON at position ${position[1]}`
      : `not valid JSON at line ${position[2]}, column ${position[3]}`;
  }
  if (error.name === 'SyntaxError') {
    return /end of JSON input/.test(error.message) ? 'not valid JSON: it ends too soon' : 'not valid JSON';
  }
  return 'a syntax error';
}
