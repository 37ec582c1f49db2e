#!/usr/bin/env node
import { parseFastCall } from './call-fast-path.js';
import { setUpProcess } from './process-setup.js';

// The CLI: a plain `switchboard call` (the command a script runs once per request, often sent to a
// running `serve`) goes straight to the command, without commander's program; everything else is parsed
// by the full command tree. Both load their modules only now, after the arguments said which path.
setUpProcess();
const fastCall = parseFastCall(process.argv.slice(2));
if (fastCall === undefined) {
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
