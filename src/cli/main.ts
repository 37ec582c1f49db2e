#!/usr/bin/env node
import { flushTracing } from '../observe/tracing.js';
import { parseFastCall } from './call-fast-path.js';
import { parseFastHook } from './hook-fast-path.js';
import { setUpProcess } from './process-setup.js';
import { parseFastRoute } from './route-fast-path.js';

// The CLI: a plain `switchboard call` or `switchboard route` (what a script runs once per request,
// often sent to a running `serve`) and the prompt hook's `hooks run` (once per prompt) go straight to
// the command, without commander's program; everything else is parsed by the full command tree. Each
// loads its modules only now, after the arguments said which path.
setUpProcess();
const fastCall = parseFastCall(process.argv.slice(2));
const fastRoute = fastCall === undefined ? parseFastRoute(process.argv.slice(2)) : undefined;
const fastHook =
  fastCall === undefined && fastRoute === undefined ? parseFastHook(process.argv.slice(2)) : undefined;
if (fastHook !== undefined) {
  const { runHook } = await import('./hook-fast-path.js');
  await runHook(fastHook.flags, fastHook.globals);
} else if (fastRoute !== undefined) {
  const [{ runFastRoute }, { reportError }] = await Promise.all([
    import('./route-fast-path.js'),
    import('./report-error.js'),
  ]);
  try {
    await runFastRoute(fastRoute);
  } catch (error) {
    process.exitCode = reportError(error, process.argv.includes('--json'));
  }
} else if (fastCall === undefined) {
  const { runProgram } = await import('./run-program.js');
  await runProgram(process.argv);
} else {
  const [{ runCall }, { reportError }] = await Promise.all([
    import('./call-run.js'),
    import('./report-error.js'),
  ]);
  try {
    await runCall(fastCall.spec, fastCall.words, fastCall.flags, () => ({}));
  } catch (error) {
    process.exitCode = reportError(error, process.argv.includes('--json'));
  }
}
// Spans still held are sent before the process ends, within a short bound: a collector that is down
// costs one warning line, and its pending request must not keep the process alive.
if (!(await flushTracing())) process.exit();
