import { readBoundedFile, syntaxErrorWithoutContent } from './bounded-file.js';
import { isSwitchboardError, SwitchboardError, type ErrorCode } from './errors.js';
import { loadYaml } from './lazy-packages.js';

export interface DataFileOptions {
  /** The error's code when the file cannot be read or parsed. */
  code: ErrorCode;
  /** What the file is, for the message: "task file", "scenario file". */
  kind: string;
  /** What to do when the file cannot be read, e.g. "check the --task path". */
  readHint: string;
  /** What to do when it is not valid YAML/JSON. @default 'fix the syntax at the position shown' */
  syntaxHint?: string;
}

/**
 * Reads a YAML or JSON file (JSON is YAML) a user handed over (`readBoundedFile`: a regular file, at most
 * 2 MiB), failing with a one-line error that names the file, the problem and its position, and the fix:
 * never the file's text, which may be a secret the caller could not read (`/etc/shadow` as a task file).
 */
export function readDataFile(
  file: string,
  { code, kind, readHint, syntaxHint = 'fix the syntax at the position shown' }: DataFileOptions,
): unknown {
  let content: string;
  try {
    content = readBoundedFile(file, { kind }).toString('utf8');
  } catch (error) {
    if (isSwitchboardError(error)) throw error;
    throw new SwitchboardError(code, `${kind} ${file} cannot be read`, { hint: readHint, cause: error });
  }
  try {
    const { parse } = loadYaml();
    // Warnings stay quiet: the package prints them to stderr with the lines around them.
    return parse(content, { logLevel: 'error' }) as unknown;
  } catch (error) {
    throw new SwitchboardError(
      code,
      `${kind} ${file} is not valid YAML/JSON: ${syntaxErrorWithoutContent(error)}`,
      {
        hint: syntaxHint,
      },
    );
  }
}
