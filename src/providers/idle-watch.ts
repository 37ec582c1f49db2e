import { AsyncLocalStorage } from 'node:async_hooks';
import { SwitchboardError } from '../core/errors.js';
import { patientFetch } from './http-dispatcher.js';

/**
 * Watches one call's HTTP traffic for silence: the request's start, the response headers and every
 * body chunk restart the clock; when nothing arrives for `idleMs`, the request is aborted and `fired`
 * says why. Works for plain and streamed answers alike, because it sits in `fetch`, below the SDK.
 */
export class IdleWatch {
  readonly idleMs: number;
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #fired = false;

  constructor(idleMs: number) {
    this.idleMs = idleMs;
  }

  /** True when silence ended the call. */
  get fired(): boolean {
    return this.#fired;
  }

  /** A fetch whose request and response restart the watch. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    this.#touch();
    const signal =
      init?.signal === undefined || init.signal === null
        ? this.#controller.signal
        : AbortSignal.any([init.signal, this.#controller.signal]);
    let response: Response;
    try {
      response = await patientFetch(input, { ...init, signal });
    } catch (error) {
      this.stop();
      throw error;
    }
    this.#touch();
    if (response.body === null) {
      this.stop();
      return response;
    }
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          this.#touch();
          controller.enqueue(chunk);
        },
        flush: () => this.stop(),
      }),
    );
    const watched = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(watched, 'url', { value: response.url });
    return watched;
  };

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The error a call fails with when the watch fired. */
  error(provider: string, where: string): SwitchboardError {
    return new SwitchboardError('IDLE_TIMEOUT', `${where} sent nothing for ${this.idleMs} ms`, {
      provider,
      hint: 'the API may be stalled; retry, raise --idle-timeout, or fall back to another provider',
    });
  }

  #touch(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#fired = true;
      this.#controller.abort();
    }, this.idleMs);
  }
}

const current = new AsyncLocalStorage<IdleWatch>();
let watching = false;

/**
 * A fetch for SDK clients shared by many calls: it watches the traffic of the call it runs in (see
 * `withIdleWatch`), and leaves waiting to the call's own limits rather than Node's five minutes
 * (see `patientFetch`).
 */
export function watchedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  // Until some call has an idle limit, no call runs under a watch: the store need not be asked.
  const watch = watching ? current.getStore() : undefined;
  return watch === undefined ? patientFetch(input, init) : watch.fetch(input, init);
}

/**
 * Runs one provider call under an idle watch when `idleMs` is given; a failure caused by the silence
 * becomes `IDLE_TIMEOUT`, whatever the SDK turned the abort into.
 */
export function withIdleWatch<T>(
  idleMs: number | undefined,
  silent: (watch: IdleWatch) => SwitchboardError,
  run: () => Promise<T>,
): Promise<T> {
  // Without a limit the call runs as it is: no watch, and no promise of our own around it.
  return idleMs === undefined ? run() : watched(idleMs, silent, run);
}

async function watched<T>(
  idleMs: number,
  silent: (watch: IdleWatch) => SwitchboardError,
  run: () => Promise<T>,
): Promise<T> {
  if (!(typeof idleMs === 'number' && Number.isFinite(idleMs) && idleMs > 0)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'Expected "idleTimeoutMs" to be a positive number of milliseconds',
    );
  }
  const watch = new IdleWatch(idleMs);
  watching = true;
  try {
    return await current.run(watch, run);
  } catch (error) {
    throw watch.fired ? silent(watch) : error;
  } finally {
    watch.stop();
  }
}
