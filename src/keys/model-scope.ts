/** A model a request would reach: its provider, its id, and the endpoint an inline spec names. */
export interface ScopeTarget {
  provider: string;
  model: string;
  baseUrl?: string;
}

/** What a key's models let a request reach (`modelScope`). */
export interface ModelScope {
  /** Whether the key may reach this target. */
  allows(target: ScopeTarget): boolean;
  /** The first target of a chain the key may not reach, or undefined when it may reach them all. */
  outside<T extends ScopeTarget>(chain: readonly T[]): T | undefined;
}

/**
 * A virtual key's `--models` as the targets they let a request reach, the one rule for every name a
 * request can give (a role, an alias, a spec, a comma chain, a route, a real model id): the name is
 * resolved first, and each target it stands for must be in scope, so no name reaches what the key's
 * own names do not.
 *
 * An entry that `resolve` knows (a role, an alias, a spec) stands for the targets it resolves to and
 * their dated snapshots (`claude-haiku-4-5-20251001` for `claude-haiku-4-5`), on the same provider and
 * endpoint. Any other entry is a model id: it allows that id and the longer ids it begins
 * (`claude-sonnet-4-5` allows `claude-sonnet-4-5-20250929`), or, one word without a dash, the ids it is
 * a part of between dashes (`llama` allows `llama-3-70b`), at a provider's configured endpoint only (not
 * an inline base URL). Case does not matter. Undefined `models`
 * allows everything; an empty list nothing.
 * @param resolve What an entry stands for when it is a name the caller defines; undefined when it is not one.
 */
export function modelScope(
  models: readonly string[] | undefined,
  resolve: (entry: string) => readonly ScopeTarget[] | undefined,
): ModelScope {
  if (models === undefined) return { allows: () => true, outside: () => undefined };
  const named: ScopeTarget[] = [];
  const literal: string[] = [];
  for (const entry of models) {
    const targets = resolve(entry);
    if (targets !== undefined) named.push(...targets);
    else if (!entry.includes(':') && !entry.includes(',')) literal.push(entry.trim().toLowerCase());
  }
  const allows = (target: ScopeTarget) =>
    named.some((allowed) => sameTarget(allowed, target)) ||
    // A model id names the model at its vendor's own endpoint: not the same id at another address.
    (target.baseUrl === undefined && literal.some((entry) => matchesId(entry, target.model)));
  return { allows, outside: (chain) => chain.find((target) => !allows(target)) };
}

/** A vendor's dated snapshot of a model: `-20251001` after its id. */
const SNAPSHOT = /^-\d{8}$/;

function sameTarget(allowed: ScopeTarget, target: ScopeTarget): boolean {
  if (allowed.provider !== target.provider || allowed.baseUrl !== target.baseUrl) return false;
  const model = target.model.toLowerCase();
  const base = allowed.model.toLowerCase();
  return model === base || (model.startsWith(base) && SNAPSHOT.test(model.slice(base.length)));
}

function matchesId(entry: string, id: string): boolean {
  const model = id.toLowerCase();
  if (entry === '' || model === '') return false;
  if (entry === model || model.startsWith(`${entry}-`)) return true;
  return !entry.includes('-') && model.split('-').includes(entry);
}
