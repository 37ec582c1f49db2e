/**
 * Polls until `condition` holds, so a test waits for a state instead of sleeping a fixed time that a
 * slow machine overruns or a fast one wastes. Throws, naming what it waited for, after `withinMs`.
 */
export async function waitFor(
  condition: () => boolean,
  { withinMs = 10_000, what = String(condition) }: { withinMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${withinMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
