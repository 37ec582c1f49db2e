/**
 * The one place that knows which strings are secrets, and removes them from text before it leaves the
 * process: printed output, errors, transcripts, ledger rows, reports, the simulator's log.
 *
 * Secrets are the values of environment variables named like credentials (read again when a second has
 * passed since the last look: reading `process.env` costs more than redacting a page), values registered with `registerSecret` (a `.env` file's values, keys
 * passed to a provider as options), and strings shaped like well-known API keys. A value shorter than
 * `MIN_SECRET_LENGTH` is not treated as a secret: replacing `1` or `true` everywhere would shred text.
 */

/**
 * Variable names whose values are secrets: `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*` and kin, and
 * `*HEADERS` (`OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer …`: a collector's credentials).
 */
export const SECRET_VARIABLE_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|HEADERS/i;

/** Shorter values are left alone. */
export const MIN_SECRET_LENGTH = 8;

/** What a secret becomes. */
export const REDACTED = '[redacted]';

/**
 * Key shapes redacted even when the value is not known here, e.g. another key a server echoes:
 * Anthropic and OpenAI (`sk-…`) and Google API keys (`AIza…`); and the password of a URL with
 * credentials (`http://user:password@proxy`), which base URLs carry into error messages and Node's
 * fetch quotes back whole.
 */
const KEY_PREFIXES = [
  { prefix: 'sk-', rest: '[A-Za-z0-9_-]', least: 20 },
  { prefix: 'AIza', rest: '[0-9A-Za-z_-]', least: 30 },
];
/** A key: its prefix, then at least so many of its characters. */
const KEYS = KEY_PREFIXES.map(({ prefix, rest, least }) => `${prefix}${rest}{${least},}`).join('|');
/**
 * A key glued to the word before it (`1sk-…`, `xAIza…`). Words hold the same shape
 * (`task-management-framework`), so a glued key must also look generated: a capital letter and a
 * digit among its first 64 characters, and a run of 20 without a hyphen among its first words. A
 * title with a year (`Task-Force-2024-Quarterly-Report`) has no such run; a random key has all three.
 * Each look ahead is bounded: a text of glued prefixes is searched in linear time.
 */
const GENERATED = [
  String.raw`[\w-]{0,63}?[A-Z]`,
  String.raw`[\w-]{0,63}?\d`,
  String.raw`(?:\w{0,19}-){0,10}?\w{20}`,
]
  .map((ahead) => `(?=${ahead})`)
  .join('');
const GLUED_KEYS = KEY_PREFIXES.map(
  ({ prefix, rest, least }) => `${prefix}${GENERATED}${rest}{${least},}`,
).join('|');
/** What a key may begin with while it is still arriving: a first part of its prefix, or more of it. */
const KEY_STARTS = KEY_PREFIXES.flatMap(({ prefix, rest }) => [
  ...Array.from({ length: prefix.length - 1 }, (_, index) => prefix.slice(0, index + 1)),
  `${prefix}${rest}*`,
]).join('|');
/**
 * The same for a key glued to a word: only from its whole prefix on, since words end in `s` and `sk`
 * all the time (holding each would rewrite most events, and drop their log probabilities); and from
 * the character before it, so that the held text, sent on at the start of a later delta, does not
 * begin a word there (`risk-` + `management-framework`: that event alone would look like a key).
 */
const GLUED_KEY_STARTS = String.raw`\w(?:${KEY_PREFIXES.map(({ prefix, rest }) => `${prefix}${rest}*`).join('|')})`;
/** Before a URL's password: its scheme and user (the password is what follows, up to its `@`). */
const URL_USER = String.raw`(?<=\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:)`;
const PASSWORD_CHARACTER = String.raw`[^\s/?#@]`;
const KEY_SHAPES = String.raw`\b(?:${KEYS})|\B(?:${GLUED_KEYS})|${URL_USER}${PASSWORD_CHARACTER}+(?=@)`;

/** How long the environment's secrets are reused before `process.env` is read again. */
const ENVIRONMENT_RESCAN_MS = 1000;

const registered = new Set<string>();
/** When the known values were last gathered; minus infinity forces a fresh look. */
let gatheredAt = Number.NEGATIVE_INFINITY;
let cachedSignature: string | undefined;
let cachedPattern = new RegExp(KEY_SHAPES, 'g');

/**
 * Adds a value (an API key given as an option, a `.env` value) to the secrets every output is cleaned
 * of, for the life of the process. A comma-separated list (a key pool) adds each item too.
 */
export function registerSecret(value: string | undefined): void {
  for (const candidate of candidates(value)) {
    if (registered.has(candidate)) continue;
    registered.add(candidate);
    gatheredAt = Number.NEGATIVE_INFINITY;
  }
}

/**
 * The value and, for a list like `GEMINI_API_KEYS=a,b`, each item, and for a list of headers like
 * `OTEL_EXPORTER_OTLP_HEADERS=x-team=abc,…` each item's value, when long enough to be a secret.
 */
function candidates(value: string | undefined): string[] {
  if (value === undefined) return [];
  const parts = value.split(/[\s,;]+/);
  const values = parts.flatMap((part) => (part.includes('=') ? [part.slice(part.indexOf('=') + 1)] : []));
  const items = [value, ...parts, ...values].map((item) => item.trim());
  return items.filter((item) => item.length >= MIN_SECRET_LENGTH);
}

/**
 * Whether a `.env` entry holds a secret: its name looks like one, or its value looks like a credential
 * rather than a setting. A plain word (`production`, `localhost`, `api.example.com`), a number, or text
 * with spaces is a setting: redacting every occurrence of it would shred normal output.
 */
export function isDotEnvSecret(name: string, value: string): boolean {
  if (SECRET_VARIABLE_NAME.test(name)) return true;
  return !/\s/.test(value) && !/^[A-Za-z._-]*$/.test(value) && !/^[\d.:_-]*$/.test(value);
}

/** Whether `value` was registered as a secret (a `.env` value, a key given as an option). */
export function isRegisteredSecret(value: string): boolean {
  return registered.has(value);
}

/** Every secret value known now, longest first, so a key that contains another is replaced whole. */
export function secretValues(environment: NodeJS.ProcessEnv = process.env): string[] {
  const values = new Set(registered);
  for (const [name, value] of Object.entries(environment)) {
    if (SECRET_VARIABLE_NAME.test(name)) for (const candidate of candidates(value)) values.add(candidate);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

function pattern(): RegExp {
  const now = performance.now();
  if (now - gatheredAt < ENVIRONMENT_RESCAN_MS) return cachedPattern;
  gatheredAt = now;
  const values = secretValues();
  const signature = values.join('\0');
  if (signature !== cachedSignature) {
    const escaped = values.map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    cachedPattern = new RegExp([...escaped, KEY_SHAPES].join('|'), 'g');
    cachedSignature = signature;
  }
  return cachedPattern;
}

/**
 * The same key shapes inside JSON text: a URL's user and password may hold escapes (`\\"`) but never a
 * bare `"`, so a match cannot run from one JSON string into the next. A key right after an escape
 * (`\\n`, `\\t`, `\\u001b`) starts a word in the text but not in its JSON (`\\nsk-…`), so an escape
 * counts as a word boundary there.
 */
const WORD_START_IN_JSON = String.raw`(?:\b|(?<=\\(?:[bfnrt]|u[0-9A-Fa-f]{4})))`;
const URL_USER_IN_JSON = String.raw`(?<=\b[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^\s/?#@:"\\]|\\.)*:)`;
const PASSWORD_CHARACTER_IN_JSON = String.raw`(?:[^\s/?#@"\\]|\\.)`;
const KEY_SHAPES_IN_JSON = String.raw`${WORD_START_IN_JSON}(?:${KEYS})|\B(?:${GLUED_KEYS})|${URL_USER_IN_JSON}${PASSWORD_CHARACTER_IN_JSON}+(?=@)`;

let jsonSignature: string | undefined;
let jsonPattern = new RegExp(KEY_SHAPES_IN_JSON, 'g');

function patternInJson(): RegExp {
  const forms = knownSecretForms(true);
  if (cachedSignature !== jsonSignature) {
    const escaped = [...forms]
      .sort((a, b) => b.length - a.length)
      .map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    jsonPattern = new RegExp([...escaped, KEY_SHAPES_IN_JSON].join('|'), 'g');
    jsonSignature = cachedSignature;
  }
  return jsonPattern;
}

/**
 * `JSON.stringify(value)` with every known secret and key shape redacted, in one pass over the text:
 * the JSON-escaped form of each secret is matched too, so a key holding `"` or `\\` cannot slip through
 * its escaping. What every HTTP answer and event stream of `serve` goes through.
 */
export function redactedJsonText(value: unknown): string {
  return redactJsonText(JSON.stringify(value));
}

/**
 * JSON text (a request body about to leave for a provider) with every known secret redacted in its
 * JSON-escaped form too, so the result is still the same JSON with `[redacted]` in the strings.
 */
export function redactJsonText(json: string): string {
  let out = '';
  let at = 0;
  for (const [start, end] of secretRanges(json, true)) {
    out += json.slice(at, start) + REDACTED;
    at = end;
  }
  return at === 0 ? json : out + json.slice(at);
}

/**
 * Where the secrets are in `text`, as `[start, end)` ranges in order: what `redactJsonText` replaces
 * (for `json`) and a stream redacting text that arrives in pieces cuts around. JSON text's `\\u`
 * escapes are read first, since any character may be written as one (`\\u0073k-…`); a range then
 * covers whole escapes, so replacing it leaves the same JSON with `[redacted]` in its string.
 */
export function secretRanges(text: string, json: boolean): [number, number][] {
  const reading = json && ESCAPES_TO_READ.test(text) ? readEscapes(text) : undefined;
  const view = reading?.text ?? text;
  if (!mayHoldSecret(view, json)) return [];
  const ranges: [number, number][] = [];
  for (const match of view.matchAll(json ? patternInJson() : pattern())) {
    const end = match.index + match[0].length;
    if (reading === undefined) ranges.push([match.index, end]);
    else ranges.push([reading.starts[match.index] ?? 0, reading.ends[end - 1] ?? text.length]);
  }
  return ranges;
}

/** JSON text holds an escape that may hide a secret's character, or ends in the first part of one. */
const ESCAPES_TO_READ = /\\[u/]|\\$/;

/**
 * JSON text with its `\\u` escapes read, each as JSON writes the character it stands for (`\\u0073` as
 * `s`, `\\u0022` as `\\"`, `\\u000a` as `\\n`), so the JSON forms of the secrets are found in it;
 * `\\/` as `/`. `starts` and `ends`: for each character read, where its escape begins and ends in the
 * text. `unfinished`: where an escape the text ends in the middle of begins (a stream's next piece
 * may finish it as a secret's first character), else the text's length.
 */
interface EscapesRead {
  text: string;
  starts: number[];
  ends: number[];
  unfinished: number;
}

function readEscapes(json: string): EscapesRead {
  const read: EscapesRead = { text: '', starts: [], ends: [], unfinished: json.length };
  const add = (characters: string, start: number, end: number): void => {
    read.text += characters;
    for (let index = 0; index < characters.length; index += 1) {
      read.starts.push(start);
      read.ends.push(end);
    }
  };
  let at = 0;
  while (at < json.length) {
    const character = json[at] ?? '';
    if (character !== '\\') {
      add(character, at, at + 1);
      at += 1;
      continue;
    }
    const next = json[at + 1];
    const hex = json.slice(at + 2, at + 6);
    if (next === undefined || (next === 'u' && hex.length < 4 && /^[0-9A-Fa-f]*$/.test(hex))) {
      read.unfinished = at;
      break;
    }
    if (next === 'u' && /^[0-9A-Fa-f]{4}$/.test(hex)) {
      add(JSON.stringify(String.fromCharCode(Number.parseInt(hex, 16))).slice(1, -1), at, at + 6);
      at += 6;
      continue;
    }
    add(next === '/' ? '/' : character + next, at, at + 2);
    at += 2;
  }
  return read;
}

/** `text` with every known secret, and anything shaped like an API key, replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return mayHoldSecret(text, false) ? text.replace(pattern(), REDACTED) : text;
}

/**
 * Whether the pattern can match anywhere in `text`: every match holds a known secret (for `json`, or its
 * JSON-escaped form), `sk-`, `AIza`, or a URL password's `@`. The pattern, its alternatives behind
 * look-behinds, is tried at every position of the text; these plain searches cost a fraction of that,
 * and most texts (every /route answer) hold none of them.
 */
function mayHoldSecret(text: string, json: boolean): boolean {
  if (text.includes('sk-') || text.includes('AIza') || text.includes('@')) return true;
  for (const form of knownSecretForms(json)) if (text.includes(form)) return true;
  return false;
}

/**
 * The known secret values, longest first, and for `json` their JSON-escaped forms too (a value holding
 * `"`, `\\` or a control character).
 */
export function knownSecretForms(json: boolean): readonly string[] {
  pattern();
  const signature = cachedSignature ?? '';
  if (formsSignature !== signature) {
    const values = signature.split('\0').filter((value) => value !== '');
    plainForms = values;
    jsonForms = [...new Set(values.flatMap((value) => [value, JSON.stringify(value).slice(1, -1)]))];
    formsSignature = signature;
  }
  return json ? jsonForms : plainForms;
}

let formsSignature: string | undefined;
let plainForms: string[] = [];
let jsonForms: string[] = [];

/** How much of a text's end is searched for the start of a key shape (a URL's scheme and user included). */
const SHAPE_WINDOW = 1024;
/**
 * What may be the start of a key shape still arriving, at the very end of a text: a word beginning
 * like a key's prefix (or all of it and more), or the password of a URL with credentials before its `@`.
 */
const KEY_SHAPE_START = new RegExp(
  String.raw`(?:\b(?:${KEY_STARTS})|${GLUED_KEY_STARTS}|${URL_USER}${PASSWORD_CHARACTER}*)$`,
);
/** The same in JSON text, where a password may end in the first half of an escape. */
const KEY_SHAPE_START_IN_JSON = new RegExp(
  String.raw`(?:${WORD_START_IN_JSON}(?:${KEY_STARTS})|${GLUED_KEY_STARTS}|${URL_USER_IN_JSON}${PASSWORD_CHARACTER_IN_JSON}*\\?)$`,
);

/**
 * Where, at the end of `text`, a secret may have begun that the text does not finish: the smallest index
 * from which the rest of the text is the beginning of a known secret (or of its JSON-escaped form, for
 * `json`, its `\\u` escapes read, or an escape not finished yet) or of a key shape; `text.length` when there is none. A stream holds the text from there until
 * the next piece says whether it is a secret.
 */
export function secretStartAtEnd(text: string, json: boolean): number {
  if (!json || !ESCAPES_TO_READ.test(text)) return startAtEnd(text, json);
  const read = readEscapes(text);
  const start = startAtEnd(read.text, json);
  return Math.min(read.unfinished, read.starts[start] ?? text.length);
}

/** `secretStartAtEnd` in text whose escapes, if any, are read. */
function startAtEnd(text: string, json: boolean): number {
  let start = text.length;
  if (text === '') return start;
  const last = text[text.length - 1];
  for (const value of knownSecretForms(json)) {
    // The longest beginning of `value` that `text` ends with, shorter than the value itself.
    for (let end = Math.min(value.length - 1, text.length); end > 0; end -= 1) {
      if (value[end - 1] !== last || !text.endsWith(value.slice(0, end))) continue;
      start = Math.min(start, text.length - end);
      break;
    }
  }
  // Only the end of the text can hold such a start: a bounded window keeps the search linear.
  const from = Math.max(0, text.length - SHAPE_WINDOW);
  const shape = (json ? KEY_SHAPE_START_IN_JSON : KEY_SHAPE_START).exec(text.slice(from));
  if (shape !== null) start = Math.min(start, from + shape.index);
  return start;
}

/** A copy of a JSON-like value with every string in it redacted (keys included). */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => redactDeep(item)) as T;
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [redactSecrets(key), redactDeep(item)]),
    ) as T;
  }
  return value;
}

/** Forgets the registered values and reads the environment afresh at the next use (tests). */
export function resetSecrets(): void {
  registered.clear();
  gatheredAt = Number.NEGATIVE_INFINITY;
}

const secretFolders = new Set<string>();

/**
 * Notes a folder that holds the user's secrets in files (the one `.env` was loaded from), for the life
 * of the process: the sandboxes of agents' commands hide it, wherever it lies.
 */
export function registerSecretFolder(folder: string): void {
  secretFolders.add(folder);
}

/** The folders `registerSecretFolder` noted. */
export function secretFolderList(): string[] {
  return [...secretFolders];
}
