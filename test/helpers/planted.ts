import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

// What the security tests share: a search of a folder for planted secrets, and a tap that keeps every
// request Claude Code's side sends byte for byte (the simulator's own log redacts keys, so it cannot tell).

/**
 * Every file under `directory` (but the paths in `skip`, such as the files the secrets were planted in)
 * that holds one of `secrets`, as `path: secret`. A folder or file gone meanwhile is passed over.
 */
export function filesHolding(
  directory: string,
  secrets: readonly string[],
  skip: readonly string[] = [],
): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(folder, name);
      if (skip.includes(path)) continue;
      const stat = statSync(path, { throwIfNoEntry: false });
      if (stat?.isDirectory() === true) walk(path);
      else if (stat?.isFile() === true) {
        let bytes: Buffer;
        try {
          bytes = readFileSync(path);
        } catch {
          continue;
        }
        for (const secret of secrets) if (bytes.includes(secret)) found.push(`${path}: ${secret}`);
      }
    }
  };
  walk(directory);
  return found;
}

export interface Tap {
  url: string;
  /** Each request as `<headers as JSON>\n<body>`. */
  requests: string[];
  close(): Promise<void>;
}

/** A pass-through proxy on 127.0.0.1 to `target` that records each request's headers and body as sent. */
export async function startTap(target: string): Promise<Tap> {
  const requests: string[] = [];
  const upstream = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push(`${JSON.stringify(incoming.headers)}\n${body.toString('utf8')}`);
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: incoming.url,
          method: incoming.method,
          headers: incoming.headers,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A service on a Unix socket under /run that hands `secret` to whoever connects. */
export interface SocketService {
  secret: string;
  /** False where this user may not create a socket under /run (only root may): nothing to find then. */
  listening: boolean;
  close: () => void;
}

/** Starts a `SocketService` at `/run/switchboard-test-<random>.sock`. */
export async function runSocketService(secret: string): Promise<SocketService> {
  const path = join('/run', `switchboard-test-${process.pid}-${Date.now()}.sock`);
  const service = createNetServer((client) => client.end(secret));
  const listening = await new Promise<boolean>((resolve) => {
    service.once('error', () => resolve(false));
    service.listen(path, () => resolve(true));
  });
  return { secret, listening, close: () => void service.close() };
}
