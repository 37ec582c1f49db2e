/** Result of looking for JSON in a model's text answer. */
export type ExtractedJson = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Finds a JSON value in text a model wrote: the whole text, a ```json fenced block, or the first
 * balanced `{…}` / `[…]` with prose around it. Never throws.
 */
export function extractJson(text: string): ExtractedJson {
  const trimmed = text.trim();
  const whole = tryParse(trimmed);
  if (whole.ok) return whole;
  for (const match of trimmed.matchAll(/```(?:json|JSON)?\s*\n?([\s\S]*?)```/g)) {
    const fenced = tryParse((match[1] ?? '').trim());
    if (fenced.ok) return fenced;
  }
  for (let start = 0; start < trimmed.length; start++) {
    const open = trimmed[start];
    if (open !== '{' && open !== '[') continue;
    const end = balancedEnd(trimmed, start);
    if (end === -1) continue;
    const candidate = tryParse(trimmed.slice(start, end + 1));
    if (candidate.ok) return candidate;
  }
  return { ok: false, reason: trimmed === '' ? 'the answer is empty' : 'the answer holds no JSON value' };
}

function tryParse(text: string): ExtractedJson {
  if (text === '') return { ok: false, reason: 'empty' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Index of the bracket closing the one at `start`, skipping strings; -1 when unbalanced. */
function balancedEnd(text: string, start: number): number {
  const closing: string[] = [];
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index++;
      else if (character === '"') inString = false;
      continue;
    }
    if (character === '"') inString = true;
    else if (character === '{') closing.push('}');
    else if (character === '[') closing.push(']');
    else if (character === '}' || character === ']') {
      if (closing.pop() !== character) return -1;
      if (closing.length === 0) return index;
    }
  }
  return -1;
}
