import type { WorkflowDefinition } from '../model.js';

/** Definitions kept per process; a long-lived orchestrator runs a handful of files over and over. */
const CAPACITY = 64;

interface Entry {
  definition: WorkflowDefinition;
  /** Every environment variable the file's `${VAR}` references read, with the value it had. */
  variables: Array<[string, string | undefined]>;
}

const entries = new Map<string, Entry>();

/**
 * The definition built from exactly these bytes at this path (relative paths resolve against it) under
 * the same values of the variables it read, when one was built before in this process: reading a
 * workflow file (YAML, zod, the build) costs milliseconds every run otherwise. Files with `!file`
 * includes are never kept, since an included file may change while the top file does not.
 */
export function cachedDefinition(
  file: string,
  hash: string,
  env: NodeJS.ProcessEnv,
): WorkflowDefinition | undefined {
  const key = `${file}\0${hash}`;
  const entry = entries.get(key);
  if (entry === undefined) return undefined;
  if (!entry.variables.every(([name, value]) => env[name] === value)) return undefined;
  // Least recently used goes first: move this one to the end.
  entries.delete(key);
  entries.set(key, entry);
  return entry.definition;
}

export function rememberDefinition(
  file: string,
  hash: string,
  variables: ReadonlyMap<string, string | undefined>,
  definition: WorkflowDefinition,
): void {
  const key = `${file}\0${hash}`;
  entries.delete(key);
  entries.set(key, { definition, variables: [...variables] });
  while (entries.size > CAPACITY) {
    const oldest = entries.keys().next().value as string;
    entries.delete(oldest);
  }
}

/** An environment that notes every variable read through it (`${VAR}` substitution's lookups). */
export function recordingEnvironment(env: NodeJS.ProcessEnv): {
  env: NodeJS.ProcessEnv;
  read: Map<string, string | undefined>;
} {
  const read = new Map<string, string | undefined>();
  const recording = new Proxy(env, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof name === 'string') read.set(name, typeof value === 'string' ? value : undefined);
      return value;
    },
  });
  return { env: recording, read };
}
