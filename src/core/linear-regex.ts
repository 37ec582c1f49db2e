import { createRequire } from 'node:module';
import type * as Re2Module from 're2js';

// Every regular expression a caller, a config file or a model writes runs here, never in V8's
// backtracking engine: `^(a|a)+$` against thirty characters takes V8 minutes, and it holds the event
// loop (serve answers nothing meanwhile). RE2 matches in time linear in the text; the price is that it
// has no backreferences and no lookaround, which such patterns rarely need. re2js is loaded at the first
// pattern (about 50 ms): a process that never matches one does not pay for it.
const requirePackage = createRequire(import.meta.url);
let engine: typeof Re2Module.RE2JS | undefined;
function re2(): typeof Re2Module.RE2JS {
  engine ??= (requirePackage('re2js') as typeof Re2Module).RE2JS;
  return engine;
}

/** A compiled pattern: what callers use of a `RegExp`. */
export interface LinearRegex {
  readonly source: string;
  readonly flags: string;
  test(text: string): boolean;
  /** `/source/flags`: Ajv keys the patterns it has compiled by it. */
  toString(): string;
}

/** Why a pattern cannot run in linear time, naming the construct. */
export class UnsupportedPatternError extends Error {
  override name = 'UnsupportedPatternError';
}

/**
 * Compiles a JavaScript-syntax pattern (flags `i`, `m`, `s`; `g`, `y`, `u`, `d` change nothing a test
 * sees) for RE2, or throws `UnsupportedPatternError` saying which construct it has no linear-time match
 * for (a backreference, a lookahead or lookbehind) or what is wrong with it.
 */
export function linearRegex(source: string, flags = ''): LinearRegex {
  const RE2JS = re2();
  const unknown = flags.replace(/[gimsuyd]/g, '');
  if (unknown !== '') throw new UnsupportedPatternError(`unknown regular expression flag "${unknown}"`);
  const construct = unsupportedConstruct(source);
  if (construct !== undefined) {
    throw new UnsupportedPatternError(
      `${construct} is not supported: patterns run in linear time (RE2 syntax), without backreferences or lookaround`,
    );
  }
  let bits = 0;
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes('m')) bits |= RE2JS.MULTILINE;
  if (flags.includes('s')) bits |= RE2JS.DOTALL;
  let compiled: Re2Module.RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source), bits);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UnsupportedPatternError(message.replace(/^error parsing regexp: /, ''));
  }
  return { source, flags, test: (text) => compiled.test(text), toString: () => `/${source}/${flags}` };
}

/** Why `linearRegex` refuses a pattern; undefined when it compiles. */
export function linearRegexProblem(source: string, flags = ''): string | undefined {
  try {
    linearRegex(source, flags);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * The constructs RE2 lacks, named as a user knows them (RE2's own message for `\1` is "invalid escape
 * sequence"). Escaped characters and character classes are skipped, so `[(?=]` and `\(?=` pass.
 */
function unsupportedConstruct(source: string): string | undefined {
  let inClass = false;
  for (let index = 0; index < source.length; index++) {
    const char = source[index];
    if (char === '\\') {
      const next = source[index + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `the backreference \\${next}`;
      if (!inClass && next === 'k' && source[index + 2] === '<') return 'the named backreference \\k<…>';
      index++;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') {
      inClass = true;
    } else if (char === '(' && source[index + 1] === '?') {
      const kind = source.slice(index + 2, index + 4);
      if (kind.startsWith('=')) return 'the lookahead (?=…)';
      if (kind.startsWith('!')) return 'the negative lookahead (?!…)';
      if (kind === '<=') return 'the lookbehind (?<=…)';
      if (kind === '<!') return 'the negative lookbehind (?<!…)';
    }
  }
  return undefined;
}
