import type { SwitchboardError } from '../core/errors.js';

/** Socket errors of a connection that was open (the request went out) and then closed with no answer. */
const DROPPED_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const DROPPED_TEXT = /ECONNRESET|socket hang up|other side closed|UND_ERR_SOCKET/i;

/**
 * True when the provider could not be reached because the connection dropped after the request was
 * sent, rather than because nothing listens there (ECONNREFUSED, DNS). No answer arrived, so sending
 * the request again is safe and often works; a server that is not there is left for the next provider.
 */
export function droppedAfterSending(error: SwitchboardError): boolean {
  if (error.code !== 'PROVIDER_UNAVAILABLE') return false;
  // The provider already sent it again itself (Claude Code's one retry): once is enough.
  if (error.details?.['resent'] === true) return false;
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && DROPPED_CODES.has(code)) return true;
    if (typeof message === 'string' && DROPPED_TEXT.test(message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
