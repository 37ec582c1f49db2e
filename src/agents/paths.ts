import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';

/** Where a path really is (links followed), or its absolute form when it does not exist (yet). */
export function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
