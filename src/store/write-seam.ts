/**
 * Test seam for crash tests: `SWITCHBOARD_TEST_KILL_AFTER_WRITE=k` SIGKILLs this process right after
 * its k-th committed store write (workflow store transactions, ledger call-attempt batches). Killing
 * after every k in turn crashes a run between every pair of writes, not only at the engine's named
 * boundaries, so a step's completion split over two writes shows up as a step run twice on resume.
 * Without the variable this is one property read per write.
 */
let committed = 0;

export function afterCommittedWrite(): void {
  const killAfter = process.env['SWITCHBOARD_TEST_KILL_AFTER_WRITE'];
  if (killAfter === undefined || killAfter === '') return;
  committed += 1;
  if (committed === Number(killAfter)) process.kill(process.pid, 'SIGKILL');
}
