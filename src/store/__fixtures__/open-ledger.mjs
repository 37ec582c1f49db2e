// Child process for the ledger test: opens a ledger in the folder it is given and prints the outcome
// as one JSON line, so the test can run it without the privileges that let root ignore permissions.
// Usage: node --experimental-strip-types open-ledger.mjs <state-dir>
import process from 'node:process';
import './typescript-sources.mjs';

const [stateDir] = process.argv.slice(2);
const { openLedger } = await import('../ledger.ts');
try {
  await openLedger({ stateDir }).close();
  process.stdout.write(`${JSON.stringify({ opened: true })}\n`);
} catch (error) {
  const { name, code, message, hint } = error;
  process.stdout.write(`${JSON.stringify({ name, code, message, hint })}\n`);
}
