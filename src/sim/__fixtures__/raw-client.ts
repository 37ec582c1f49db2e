import { request } from 'node:http';

/** One server-sent event as it came over the wire. */
export interface RawEvent {
  event: string | undefined;
  data: string;
}

/** What a raw HTTP client saw of one exchange, byte for byte. */
export interface RawExchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  events: RawEvent[];
  /** `end`: the body ended cleanly; `reset`: the connection closed mid-body; `silent`: nothing came for `idleMs`. */
  ending: 'end' | 'reset' | 'silent';
  /** Milliseconds since the request was sent at which each event's first byte arrived. */
  arrivals: number[];
}

export function parseSse(text: string): RawEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice('event: '.length);
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice('data: '.length))
        .join('\n');
      return { event, data };
    });
}

/** POSTs JSON and reads the answer without any SDK in between; gives up after `idleMs` of silence. */
export function rawPost(
  url: string,
  body: unknown,
  { headers = {}, idleMs = 2_000 }: { headers?: Record<string, string>; idleMs?: number } = {},
): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const outgoing = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
    });
    outgoing.on('error', reject);
    outgoing.on('response', (incoming) => {
      let text = '';
      const arrivals: number[] = [];
      let settled = false;
      let idle: NodeJS.Timeout | undefined;
      const finish = (ending: RawExchange['ending']): void => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        resolve({
          status: incoming.statusCode ?? 0,
          headers: incoming.headers,
          text,
          events: parseSse(text),
          ending,
          arrivals,
        });
        if (ending === 'silent') outgoing.destroy();
      };
      const arm = (): void => {
        clearTimeout(idle);
        idle = setTimeout(() => finish('silent'), idleMs);
      };
      arm();
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => {
        arm();
        const before = parseSse(text).length;
        text += chunk;
        for (let index = before; index < parseSse(text).length; index++) arrivals.push(Date.now() - started);
      });
      incoming.on('end', () => finish('end'));
      incoming.on('error', () => finish('reset'));
      incoming.on('close', () => finish(incoming.complete ? 'end' : 'reset'));
    });
    outgoing.end(JSON.stringify(body));
  });
}
