/**
 * Removes an API key, and anything shaped like an Anthropic or OpenAI key (`sk-…`), from text that may
 * be shown, logged or stored: providers echo keys in some error messages.
 */
export function redact(text: string, apiKey: string): string {
  const withoutKey = apiKey.length >= 4 ? text.split(apiKey).join('[redacted]') : text;
  return withoutKey.replace(/\bsk-[A-Za-z0-9_*-]{4,}/g, 'sk-[redacted]');
}
