import { readFileSync } from 'node:fs';
import { SwitchboardError, type ErrorCode } from './errors.js';
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
 * Reads a YAML or JSON file (JSON is YAML) a user handed over, failing with a one-line error that
 * names the file, the problem and the fix.
 */
export function readDataFile(
  file: string,
  { code, kind, readHint, syntaxHint = 'fix the syntax at the position shown' }: DataFileOptions,
): unknown {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SwitchboardError(code, `${kind} ${file} cannot be read`, { hint: readHint, cause: error });
  }
  try {
    const { parse } = loadYaml();
    return parse(content) as unknown;
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new SwitchboardError(code, `${kind} ${file} is not valid YAML/JSON: ${message}`, {
      hint: syntaxHint,
    });
  }
}
