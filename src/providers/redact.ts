import { redactSecrets } from '../core/secrets.js';

/**
 * Removes an API key, and anything shaped like an Anthropic or OpenAI key (`sk-…`), from text that may
 * be shown, logged or stored: providers echo keys in some error messages. Every other known secret
 * (see `redactSecrets`) goes too, so a server that echoes another provider's key leaks nothing.
 */
export function redact(text: string, apiKey: string): string {
  const withoutKey = apiKey.length >= 4 ? text.split(apiKey).join('[redacted]') : text;
  return redactSecrets(withoutKey.replace(/\bsk-[A-Za-z0-9_*-]{4,}/g, 'sk-[redacted]'));
}
