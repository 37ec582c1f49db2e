import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { writeFileAtomically } from '../store/atomic-file.js';

/** Writes a report file whole or not at all, creating its folder. */
export function writeReport(path: string, content: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileAtomically(path, content);
  } catch (error) {
    throw new SwitchboardError('INVALID_INPUT', `cannot write ${path}: ${(error as Error).message}`, {
      hint: 'choose a path in a folder you can write to',
    });
  }
}
