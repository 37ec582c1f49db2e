// Child process for the racing key-secret test: loads the secret through the real `loadKeySecret`
// (Node's type stripping) once the parent says go, and sends back a hash made with it.
//
// Usage (forked with IPC): node --experimental-strip-types load-secret.mjs <stateDir>
import process from 'node:process';
import '../../store/__fixtures__/typescript-sources.mjs';

const [stateDir] = process.argv.slice(2);
const { hashVirtualKey, loadKeySecret } = await import('../key-secret.ts');

await new Promise((resolveStart) => {
  process.once('message', resolveStart);
  process.send?.('ready');
});
const secret = loadKeySecret({ stateDir, env: {} });
process.send?.({ hash: hashVirtualKey('sbk_race', secret) }, () => process.exit(0));
