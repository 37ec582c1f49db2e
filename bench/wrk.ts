// What the HTTP benches share: Debian's `wrk` (one thread, a new text in every request so that no
// decision is a cache hit), its figures parsed, and a server's URL read from its "listening on" line.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';

/** Exits 0 with a "skipped" line when wrk is not installed. */
export function requireWrk(): void {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    // wrk prints its version and exits 1.
    if ((error as { code?: string }).code === 'ENOENT') {
      console.log('skipped: wrk is not installed (apt-get install wrk)');
      process.exit(0);
    }
  }
}

/** The URL a child prints in its first "listening on http://…" line; rejects if it exits first. */
export function waitForUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url !== undefined) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`process exited ${code}: ${out}`)));
  });
}

/**
 * Writes a wrk script to `file` that POSTs to `path` with a bearer token, a new eight-word `text` per
 * request; `body` is the Lua expression of the JSON body, built from `text`.
 */
export function newTextScript(file: string, path: string, authorization: string, body: string): string {
  writeFileSync(
    file,
    `
counter = 0
words = {"review", "the", "pull", "request", "fix", "a", "bug", "in", "login", "release", "docs", "refactor", "module", "speed", "up", "query"}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "${authorization}"
request = function()
  counter = counter + 1
  local n = counter
  local text = {}
  for i = 1, 8 do
    text[i] = words[(n * 7 + i * 13) % #words + 1]
  end
  text = table.concat(text, " ") .. " item " .. n
  return wrk.format(nil, "${path}", nil, ${body})
end
`,
  );
  return file;
}

export interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(value.trim());
  if (match === null) return Number.NaN;
  const amount = Number(match[1]);
  return match[2] === 'us' ? amount / 1000 : match[2] === 's' ? amount * 1000 : amount;
}

/** One wrk run: requests per second, p50/p99 in ms, and non-2xx responses plus socket errors. */
export function runWrk(url: string, script: string, connections: number, seconds: number): WrkResult {
  const output = execFileSync(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url],
    { encoding: 'utf8' },
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1]);
  const p50 = toMs(/^\s+50%\s+(\S+)/m.exec(output)?.[1] ?? '');
  const p99 = toMs(/^\s+99%\s+(\S+)/m.exec(output)?.[1] ?? '');
  const errors =
    Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0) +
    [...output.matchAll(/(connect|read|write|timeout) (\d+)/g)].reduce((sum, m) => sum + Number(m[2]), 0);
  return { rps, p50, p99, errors };
}

export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
