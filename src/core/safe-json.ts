/** What `safeJsonParse` found: the value, or why the text is not JSON (JSON.parse's own message). */
export type SafeJsonParse = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * `JSON.parse` that never throws: for text from a process, a file, a ledger row or the wire, where
 * bad JSON is an answer to report, not a crash.
 */
export function safeJsonParse(text: string): SafeJsonParse {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/** The JSON value of `text`, or `fallback` when it is not JSON. */
export function parseJsonOr(text: string, fallback: unknown): unknown {
  const parsed = safeJsonParse(text);
  return parsed.ok ? parsed.value : fallback;
}
