// Every request the dashboard makes goes through here: JSON in, JSON out, the server's
// `{error:{code,message,hint}}` turned into an ApiError, and a 401 remembered for the whole page.

import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';

/** An answer of the API that was not 2xx: its status and the server's error fields. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly code: string | undefined;
  readonly hint: string | undefined;

  constructor(status: number, message: string, code?: string, hint?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
  }
}

const API = '/ui/api';

let unauthorized = false;
const unauthorizedListeners = new Set<() => void>();

function markUnauthorized(): void {
  if (unauthorized) return;
  unauthorized = true;
  for (const listener of unauthorizedListeners) listener();
}

/** Whether any request of this page was answered 401 (the token cookie is missing or stale). */
export function useUnauthorized(): boolean {
  return useSyncExternalStore(
    (listener) => {
      unauthorizedListeners.add(listener);
      return () => unauthorizedListeners.delete(listener);
    },
    () => unauthorized,
  );
}

async function errorOf(response: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; hint?: unknown } } | undefined)
    ?.error;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return new ApiError(
    response.status,
    text(error?.message) ?? `${response.status} ${response.statusText || 'error'}`,
    text(error?.code),
    text(error?.hint),
  );
}

async function request<T>(path: string, init: RequestInit): Promise<T> {
  const response = await fetch(`${API}${path}`, { credentials: 'same-origin', ...init });
  if (response.status === 401) markUnauthorized();
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

export function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return request<T>(path, { headers: { Accept: 'application/json' }, ...(signal ? { signal } : {}) });
}

export function postJson<T>(path: string, body: unknown): Promise<T> {
  return request<T>(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body),
  });
}

/** `?a=1&b=2` of the defined, non-empty values (empty string when none). */
export function queryString(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  /** Fetches again, keeping the current data on screen meanwhile. */
  reload: () => void;
}

/** GET `path` (none when null) whenever it changes; the previous answer stays shown until the next. */
export function useApi<T>(path: string | null): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<ApiError>();
  const [loading, setLoading] = useState(path !== null);
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    if (path === null) return;
    const controller = new AbortController();
    const ticket = ++latest.current;
    setLoading(true);
    getJson<T>(path, controller.signal).then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (reason: unknown) => {
        if (ticket !== latest.current || controller.signal.aborted) return;
        setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
        setLoading(false);
      },
    );
    return () => controller.abort();
  }, [path, generation]);

  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data, error, loading, reload };
}
