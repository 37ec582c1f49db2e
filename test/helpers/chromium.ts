import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** `SWITCHBOARD_CHROMIUM`, else the first Chromium or Chrome on PATH; the browser tests' browser. */
export function findChromium(): string | undefined {
  const configured = process.env.SWITCHBOARD_CHROMIUM;
  if (configured !== undefined && configured !== '') return configured;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    for (const directory of (process.env.PATH ?? '').split(delimiter)) {
      if (directory === '') continue;
      const candidate = join(directory, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here; keep looking.
      }
    }
  }
  return undefined;
}
