/**
 * The connection pool every provider request goes through. Node's built-in fetch gives up when a
 * response's headers, or the gap between two body chunks, take more than 300 s (undici's
 * `headersTimeout` and `bodyTimeout`): a non-streamed answer that takes six minutes would fail with
 * `UND_ERR_HEADERS_TIMEOUT` although the call allows ten. A call's own deadline (`timeoutMs`) and
 * idle watch (`idleTimeoutMs`) decide how long to wait, so this pool has neither limit.
 */

/** The part of undici's `Agent` used here; the class itself is reached through Node's own fetch. */
interface Dispatcher {
  close(): Promise<void>;
}
type DispatcherClass = new (options: { headersTimeout: number; bodyTimeout: number }) => Dispatcher;

// Where Node's bundled undici keeps its global dispatcher (an `Agent`), once fetch has loaded it.
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

let patient: Promise<Dispatcher | undefined> | undefined;
/** The patient dispatcher once made (null: there is none to use), so that requests after the first need no await. */
let made: Dispatcher | null | undefined;

/**
 * An `Agent` of Node's bundled undici without header or body timeouts, made once per process. Node
 * exports no undici classes, and the `undici` package is not a dependency: the class is taken from the
 * global dispatcher, which a first `fetch` of a `data:` URL creates without touching the network.
 * Undefined when that dispatcher is not an undici `Agent` (a program replaced it): fetch then uses it.
 */
export function patientDispatcher(): Promise<Dispatcher | undefined> {
  patient ??= (async () => {
    if (globalDispatcher() === undefined) await fetch('data:,');
    const current = globalDispatcher();
    if (current?.constructor.name !== 'Agent') return undefined;
    return new (current.constructor as DispatcherClass)({ headersTimeout: 0, bodyTimeout: 0 });
  })();
  void patient.then((dispatcher) => (made = dispatcher ?? null));
  return patient;
}

function globalDispatcher(): object | undefined {
  const value: unknown = (globalThis as Record<symbol, unknown>)[GLOBAL_DISPATCHER];
  return typeof value === 'object' && value !== null ? value : undefined;
}

/**
 * Node's fetch through the patient dispatcher (a `dispatcher` the caller chose wins), never following a
 * redirect: fetch drops only `Authorization` on a cross-origin redirect, so `x-api-key` and
 * `x-goog-api-key` would follow a 307 from the configured endpoint to any host it names. No provider
 * API redirects; one that does fails instead of handing its key on.
 */
export async function patientFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  if (init !== undefined && 'dispatcher' in init) return fetch(input, { ...init, redirect: 'error' });
  const dispatcher = made === undefined ? await patientDispatcher() : made;
  if (dispatcher === undefined || dispatcher === null) return fetch(input, { ...init, redirect: 'error' });
  // `dispatcher` is Node's own extension of RequestInit.
  return fetch(input, { ...init, redirect: 'error', dispatcher } as RequestInit);
}
