import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { isDotEnvSecret, redactSecrets, registerSecret, registerSecretFolder } from '../core/secrets.js';

/**
 * Loads `.env` from the working directory (the environment wins) and treats its secrets as secrets,
 * its folder included (hidden from agents' commands):
 * values named like one, and values shaped like a credential whatever their names (a database URL with
 * its password). Plain settings (`NODE_ENV=production`) and `SWITCHBOARD_*` settings are not secrets.
 */
export function loadDotEnv(file = '.env'): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      process.stderr.write(`switchboard: warning: ${file} could not be read (${(error as Error).message})\n`);
    }
    return;
  }
  // Whatever the folder: Switchboard may start outside the repository (`--repo`, a container's WORKDIR).
  registerSecretFolder(dirname(resolve(file)));
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (!name.startsWith('SWITCHBOARD_') && isDotEnvSecret(name, value ?? '')) registerSecret(value);
    process.env[name] ??= value;
  }
}

/**
 * Routes everything the command writes to stdout and stderr through `redactSecrets`: the last line of
 * defence, so a message from a server, a tool or an old transcript cannot print a key.
 */
export function redactProcessOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
      if (typeof chunk === 'string') return write(redactSecrets(chunk), ...rest);
      if (chunk instanceof Uint8Array) {
        const text = Buffer.from(chunk).toString('utf8');
        const clean = redactSecrets(text);
        return write(clean === text ? chunk : Buffer.from(clean, 'utf8'), ...rest);
      }
      return write(chunk, ...rest);
    }) as typeof stream.write;
  }
}
