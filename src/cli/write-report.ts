import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SwitchboardError } from '../core/errors.js';

/**
 * Writes a report file whole or not at all (temp file, then rename), creating its folder, so a
 * reader never sees half a report and a failure leaves the previous one in place.
 */
export function writeReport(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(temporary, content);
    renameSync(temporary, path);
  } catch (error) {
    throw new SwitchboardError('INVALID_INPUT', `cannot write ${path}: ${(error as Error).message}`, {
      hint: 'choose a path in a folder you can write to',
    });
  }
}
