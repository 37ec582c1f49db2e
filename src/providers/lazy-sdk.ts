/** Stands in for an SDK's classes before it is loaded: no value is an instance of it. */
class NotLoaded {}

/**
 * A heavy module (a provider's SDK, an entry point of the public API), imported at its first call so that
 * a program that never calls it never loads it.
 */
export interface LazySdk<T> {
  /** Imports the module (once per process; a failed import is tried again at the next call). */
  load(): Promise<T>;
  /**
   * The SDK once loaded; before that, a stand-in whose every export is a class nothing is an instance
   * of. For mapping errors: nothing the SDK threw can exist before it was loaded.
   */
  current(): T;
}

export function lazySdk<T extends object>(importer: () => Promise<T>): LazySdk<T> {
  let loaded: T | undefined;
  let loading: Promise<T> | undefined;
  const standIn = new Proxy({}, { get: () => NotLoaded }) as T;
  return {
    load() {
      loading ??= importer().then(
        (module) => (loaded = module),
        (error: unknown) => {
          // An install in between is picked up by the next call.
          loading = undefined;
          throw error;
        },
      );
      return loading;
    },
    current() {
      return loaded ?? standIn;
    },
  };
}
