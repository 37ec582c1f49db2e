/** Result of looking for JSON in a model's text answer. */
export type ExtractedJson = { ok: true; value: unknown } | { ok: false; reason: string };

/** Test seam: counts the steps the extraction took (characters scanned, nodes visited, characters parsed). */
export interface ExtractWork {
  steps: number;
}

export interface ExtractJsonOptions {
  /** @internal for tests: receives the work done, to prove it stays linear in the text's length. */
  _internal?: { work?: ExtractWork };
}

/**
 * Finds a JSON value in text a model wrote: the whole text, a ```json fenced block, or the first
 * balanced `{…}` / `[…]` that is valid JSON, with prose around it. Never throws.
 *
 * Linear in the text's length whatever the text (a model's answer reaches `serve`'s event loop): one
 * scan finds where every bracket closes, then candidates are checked left to right by a validator
 * that never goes back. A bracket inside a quoted string of an enclosing candidate that turned out
 * invalid is not tried on its own.
 */
export function extractJson(text: string, { _internal }: ExtractJsonOptions = {}): ExtractedJson {
  const work = _internal?.work ?? { steps: 0 };
  const trimmed = text.trim();
  const whole = tryParse(trimmed, work);
  if (whole.ok) return whole;
  const fenced = firstFencedJson(trimmed, work);
  if (fenced) return fenced;
  const embedded = firstBalancedJson(trimmed, work);
  if (embedded) return embedded;
  return { ok: false, reason: trimmed === '' ? 'the answer is empty' : 'the answer holds no JSON value' };
}

function tryParse(text: string, work: ExtractWork): ExtractedJson {
  if (text === '') return { ok: false, reason: 'empty' };
  work.steps += text.length;
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

const FENCE = '```';

/**
 * The fenced blocks in order, as ```` ```json … ``` ```` pairs up: each opening fence with the next
 * fence after it. Done with indexOf rather than a regular expression, whose backtracking over a
 * fence followed by whitespace and no closing fence is quadratic.
 */
function firstFencedJson(text: string, work: ExtractWork): ExtractedJson | undefined {
  let from = 0;
  for (;;) {
    const open = text.indexOf(FENCE, from);
    if (open === -1) return undefined;
    let contentStart = open + FENCE.length;
    if (text.startsWith('json', contentStart) || text.startsWith('JSON', contentStart)) contentStart += 4;
    const close = text.indexOf(FENCE, contentStart);
    if (close === -1) return undefined;
    work.steps += close + FENCE.length - from;
    const parsed = tryParse(text.slice(contentStart, close).trim(), work);
    if (parsed.ok) return parsed;
    from = close + FENCE.length;
  }
}

function firstBalancedJson(text: string, work: ExtractWork): ExtractedJson | undefined {
  const ends = closingIndexes(text, work);
  for (let start = 0; start < text.length; start++) {
    if ((ends[start] ?? -1) === -1) continue;
    const checked = validateJson(text, start, work);
    const found = checked.ok ? { start, end: checked.end } : checked.firstComplete;
    if (found) {
      const parsed = tryParse(text.slice(found.start, found.end + 1), work);
      if (parsed.ok) return parsed;
    }
    // Every bracket the validator entered before failing fails at the same character, so the next
    // candidate starts there: this is what keeps the whole search linear.
    start = Math.max(start, checked.ok ? checked.end : checked.failAt - 1);
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Where each bracket closes, for every start at once.
//
// The scan from one opening bracket (skipping strings) depends only on its string state, so scans
// that are in the same state at the same character behave alike from then on. All scans are run
// together as at most three lanes (outside a string, inside one, just after a backslash inside one);
// a lane holds its scans' bracket stacks as a tree whose shared top is pushed once. A closing
// bracket pops each distinct top once, and a mismatch drops the scans below it at no cost.

interface Frame {
  start: number;
  closer: string;
}

/** Stacks sharing `frames` as their top, over the stacks in `below` (none when it is one stack). */
interface LaneNode {
  frames: Frame[];
  below: LaneNode[];
}

interface Lanes {
  outside: LaneNode | undefined;
  inside: LaneNode | undefined;
  escaped: LaneNode | undefined;
}

/** For each index, where the bracket opening there closes (strings skipped), or -1. */
function closingIndexes(text: string, work: ExtractWork): Int32Array {
  const ends = new Int32Array(text.length).fill(-1);
  let lanes: Lanes = { outside: undefined, inside: undefined, escaped: undefined };
  for (let index = 0; index < text.length; index++) {
    const character = text[index] ?? '';
    work.steps++;
    if (character === '{' || character === '[') {
      const frame = { start: index, closer: character === '{' ? '}' : ']' };
      if (lanes.outside) lanes.outside.frames.push(frame);
      else lanes.outside = { frames: [frame], below: [] };
    } else if ((character === '}' || character === ']') && lanes.outside) {
      lanes.outside = popLane(lanes.outside, character, index, ends, work);
    }
    lanes = advanceStringState(lanes, character);
  }
  return ends;
}

function advanceStringState({ outside, inside, escaped }: Lanes, character: string): Lanes {
  if (character === '"') return { outside: inside, inside: merge(outside, escaped), escaped: undefined };
  if (character === '\\') return { outside, inside: escaped, escaped: inside };
  return { outside, inside: merge(inside, escaped), escaped: undefined };
}

function merge(first: LaneNode | undefined, second: LaneNode | undefined): LaneNode | undefined {
  if (!first || !second) return first ?? second;
  return { frames: [], below: [first, second] };
}

/**
 * Pops `closer` off every stack in the lane: a matching top records where its bracket closes, a
 * mismatched one drops the stacks under it. Iterative, as a lane can nest deeply.
 */
function popLane(
  root: LaneNode,
  closer: string,
  index: number,
  ends: Int32Array,
  work: ExtractWork,
): LaneNode | undefined {
  const pending: { node: LaneNode; next: number; kept: LaneNode[] }[] = [];
  const visit = (node: LaneNode): LaneNode | undefined | null => {
    work.steps++;
    const top = node.frames.at(-1);
    if (!top) {
      pending.push({ node, next: 0, kept: [] });
      return null;
    }
    if (top.closer !== closer) return undefined;
    node.frames.pop();
    ends[top.start] = index;
    return simplify(node);
  };
  let result = visit(root);
  while (pending.length > 0) {
    const current = pending.at(-1)!;
    const child = current.node.below[current.next++];
    if (child) {
      const visited = visit(child);
      if (visited) current.kept.push(visited);
      continue;
    }
    pending.pop();
    current.node.below = current.kept;
    const simplified = simplify(current.node);
    if (pending.length === 0) result = simplified;
    else if (simplified) pending.at(-1)!.kept.push(simplified);
  }
  return result ?? undefined;
}

function simplify(node: LaneNode): LaneNode | undefined {
  if (node.frames.length > 0) return node;
  if (node.below.length <= 1) return node.below[0];
  return node;
}

// ---------------------------------------------------------------------------------------------
// A JSON validator that reports where a candidate fails and the first bracket inside it that
// closed into a valid value before that.

type Validated =
  | { ok: true; end: number }
  | { ok: false; failAt: number; firstComplete: { start: number; end: number } | undefined };

type Expect = 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'comma-or-close';

/** Validates the JSON value opening at `start` (a `{` or `[`) exactly as JSON.parse would. */
function validateJson(text: string, start: number, work: ExtractWork): Validated {
  const open: { start: number; closer: string }[] = [];
  let firstComplete: { start: number; end: number } | undefined;
  let expect: Expect = 'value';
  let index = start;
  const fail = (at: number): Validated => {
    work.steps += at - start;
    return { ok: false, failAt: Math.max(at, start + 1), firstComplete };
  };
  while (index < text.length) {
    const character = text[index] ?? '';
    if (character === ' ' || character === '\t' || character === '\n' || character === '\r') {
      index++;
      continue;
    }
    const closesHere =
      (expect === 'value-or-close' || expect === 'key-or-close' || expect === 'comma-or-close') &&
      character === open.at(-1)?.closer;
    if (closesHere) {
      const closed = open.pop()!;
      if (open.length === 0) {
        work.steps += index - start;
        return { ok: true, end: index };
      }
      if (!firstComplete || closed.start < firstComplete.start)
        firstComplete = { start: closed.start, end: index };
      expect = 'comma-or-close';
      index++;
      continue;
    }
    if (expect === 'colon' || expect === 'comma-or-close') {
      if (character === ':' && expect === 'colon') expect = 'value';
      else if (character === ',' && expect === 'comma-or-close')
        expect = open.at(-1)?.closer === '}' ? 'key' : 'value';
      else return fail(index);
      index++;
      continue;
    }
    if (expect === 'key' || expect === 'key-or-close') {
      if (character !== '"') return fail(index);
      const after = stringEnd(text, index);
      if (after === -1) return fail(text.length);
      index = after;
      expect = 'colon';
      continue;
    }
    if (character === '{' || character === '[') {
      open.push({ start: index, closer: character === '{' ? '}' : ']' });
      expect = character === '{' ? 'key-or-close' : 'value-or-close';
      index++;
      continue;
    }
    const after = scalarEnd(text, index);
    if (after === -1) return fail(index);
    index = after;
    expect = 'comma-or-close';
  }
  return fail(text.length);
}

/** Index just past the string opening at `start`, or -1 when it is not a valid JSON string. */
function stringEnd(text: string, start: number): number {
  for (let index = start + 1; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x22) return index + 1;
    if (code < 0x20) return -1;
    if (code !== 0x5c) continue;
    const escape = text[index + 1] ?? '';
    if (escape === 'u') {
      if (!/^[0-9a-fA-F]{4}$/.test(text.slice(index + 2, index + 6))) return -1;
      index += 5;
    } else if ('"\\/bfnrt'.includes(escape) && escape !== '') index++;
    else return -1;
  }
  return -1;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Index just past the string, number or literal at `start`, or -1 when there is none. */
function scalarEnd(text: string, start: number): number {
  const character = text[start];
  if (character === '"') return stringEnd(text, start);
  for (const literal of ['true', 'false', 'null']) {
    if (text.startsWith(literal, start)) return start + literal.length;
  }
  NUMBER.lastIndex = start;
  return NUMBER.test(text) ? NUMBER.lastIndex : -1;
}
