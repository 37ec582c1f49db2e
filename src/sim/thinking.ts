import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** An Anthropic request with extended thinking on (`thinking: {type: enabled | adaptive}`). */
export function thinkingEnabled(body: Record<string, unknown>): boolean {
  const thinking = body['thinking'];
  if (typeof thinking !== 'object' || thinking === null) return false;
  const type = (thinking as Record<string, unknown>)['type'];
  return type === 'enabled' || type === 'adaptive';
}

/** Signs thinking text and issues redacted-thinking data, and checks both when a request sends them back. */
export interface ThinkingSigner {
  /** Base64 HMAC of the text: the same text always gets the same signature from one simulator. */
  sign(text: string): string;
  /** Fresh opaque data for a `redacted_thinking` block, verifiable without remembering it. */
  redactedData(): string;
  /**
   * The API's 400 message for the first thinking block of an assistant turn whose signature does not
   * match its text (or redacted block whose data this simulator did not issue); undefined when all verify.
   */
  check(body: Json): string | undefined;
}

const NONCE_BYTES = 16;

/**
 * One secret per simulator, as the real API signs with a key only it holds: a gateway that edits a
 * thinking block, or passes one from another simulator, fails the check as it would against the API.
 */
export function createThinkingSigner(secret: Buffer = randomBytes(32)): ThinkingSigner {
  const mac = (purpose: string, value: Buffer | string): Buffer =>
    createHmac('sha256', secret).update(purpose).update('\0').update(value).digest();
  const equal = (left: Buffer, right: Buffer): boolean =>
    left.length === right.length && timingSafeEqual(left, right);

  function redactedValid(data: unknown): boolean {
    if (typeof data !== 'string') return false;
    const bytes = Buffer.from(data, 'base64');
    if (bytes.length <= NONCE_BYTES) return false;
    const nonce = bytes.subarray(0, NONCE_BYTES);
    return equal(bytes.subarray(NONCE_BYTES), mac('redacted', nonce));
  }

  return {
    sign: (text) => mac('thinking', text).toString('base64'),
    redactedData() {
      const nonce = randomBytes(NONCE_BYTES);
      return Buffer.concat([nonce, mac('redacted', nonce)]).toString('base64');
    },
    check(body) {
      for (const [messageIndex, message] of asArray(body['messages']).map(asObject).entries()) {
        if (message['role'] !== 'assistant') continue;
        for (const [blockIndex, block] of asArray(message['content']).map(asObject).entries()) {
          const where = `messages.${messageIndex}.content.${blockIndex}`;
          if (block['type'] === 'thinking') {
            const text = typeof block['thinking'] === 'string' ? block['thinking'] : '';
            const signature = typeof block['signature'] === 'string' ? block['signature'] : '';
            if (!equal(Buffer.from(signature), Buffer.from(mac('thinking', text).toString('base64'))))
              return `${where}: Invalid \`signature\` in \`thinking\` block`;
          }
          if (block['type'] === 'redacted_thinking' && !redactedValid(block['data']))
            return `${where}: Invalid \`data\` in \`redacted_thinking\` block`;
        }
      }
      return undefined;
    },
  };
}
