import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerCallCommand } from './call.js';
import { parseFastCall } from './call-fast-path.js';
import type { CallFlags } from './call-run.js';

/** What commander hands `call`'s action for these arguments (the real command, its action swapped). */
async function commanderCall(
  args: readonly string[],
): Promise<{ spec: string; words: string[]; flags: CallFlags }> {
  const program = new Command('switchboard').exitOverride();
  program.option('--config <file>').option('--state-dir <dir>').option('--quiet');
  registerCallCommand(program);
  let seen: { spec: string; words: string[]; flags: CallFlags } | undefined;
  program.commands[0]?.action((spec: string, words: string[], flags: CallFlags) => {
    seen = { spec, words, flags: { ...flags } };
  });
  await program.parseAsync(['node', 'switchboard', ...args]);
  if (seen === undefined) throw new Error('the action did not run');
  return seen;
}

/** Test cases named by their command line. */
const named = (cases: string[][]) => cases.map((args) => [args.join(' '), args] as const);

describe('parseFastCall', () => {
  it.each(
    named([
      ['call', 'claude:haiku', 'hello', 'world'],
      ['call', 'claude:haiku', '--server', 'http://127.0.0.1:8787', 'hello'],
      ['call', 'claude:haiku', 'say', '--json', 'it', '--server=http://x:1'],
      ['call', 'claude:haiku', '-'],
      ['call', 'claude:haiku'],
      ['call', 'fast,strong', '--print', 'text', '--system', 'be brief', 'q'],
      ['call', 'a:b', '--tag', 'team=core', '--tag=run=7', '--tag', 'team=ops', 'q'],
      ['call', 'a:b', '--timeout', '2.5', '--stage-timeout=1', '--idle-timeout', '3', 'q'],
      ['call', 'a:b', '--schema-retries', '0', '--max-cost', '0.05', '--schema', 'answer.json', 'q'],
      ['call', 'a:b', '--ignore-cooldown', '--store-text', '--system', '', 'q'],
      ['call', 'a:b', '--timeout', '1', '--timeout', '9', 'q'],
    ]),
  )('reads `%s` as commander does', async (_, args) => {
    expect(parseFastCall(args)).toEqual(await commanderCall(args));
  });

  it.each(
    named([
      ['route', 'text'],
      ['call'],
      ['call', '--help'],
      ['call', 'a:b', '-h'],
      ['call', 'a:b', 'q', '--stream'],
      ['call', 'a:b', 'q', '--no-ledger'],
      ['call', 'a:b', 'q', '--resume', 'session'],
      ['call', 'a:b', 'q', '--quiet'],
      ['call', 'a:b', 'q', '--state-dir', 'somewhere'],
      ['call', 'a:b', 'q', '--timeout', 'soon'],
      ['call', 'a:b', 'q', '--timeout', '-1'],
      ['call', 'a:b', 'q', '--schema-retries', '11'],
      ['call', 'a:b', 'q', '--max-cost', '0'],
      ['call', 'a:b', 'q', '--tag', 'no-equals'],
      ['call', 'a:b', 'q', '--print', 'json'],
      ['call', 'a:b', 'q', '--json=yes'],
      ['call', 'a:b', 'q', '--server'],
      ['call', 'a:b', '--', '--not-an-option'],
      ['call', 'a:b', '-5'],
    ]),
  )('leaves `%s` to commander', (_, args) => {
    expect(parseFastCall(args)).toBeUndefined();
  });
});
