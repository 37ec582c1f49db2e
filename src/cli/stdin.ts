/**
 * Reads all of standard input as UTF-8. Invalid byte sequences become U+FFFD instead of failing, so a
 * request with a broken encoding still gets a decision.
 */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks));
}
