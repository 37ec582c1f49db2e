/**
 * Reads all of standard input as UTF-8. Invalid byte sequences become U+FFFD instead of failing, so a
 * request with a broken encoding still gets a decision.
 */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks));
}

/**
 * The text a command works on: its words joined, or standard input when there are none or the only
 * one is `-`. `what` names it in the error ("request", "prompt").
 */
export async function textFromArguments(words: readonly string[], what: string): Promise<string> {
  if (words.length > 0 && !(words.length === 1 && words[0] === '-')) return words.join(' ');
  if (process.stdin.isTTY) {
    // Loaded only here: the prompt hook reads standard input on its quick path, where every module counts.
    const { SwitchboardError } = await import('../core/errors.js');
    throw new SwitchboardError('INVALID_INPUT', `no ${what} given`, {
      hint: `pass the ${what} as an argument, or pipe it on standard input`,
    });
  }
  return readStandardInput();
}
