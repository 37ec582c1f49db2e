import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SwitchboardError } from '../../core/errors.js';
import { sendError } from '../http.js';

// The web app's files, built by `npm run build` (vite) into dist/ui: index.html for every page path,
// hashed files under /ui/assets/. Nothing is fetched from anywhere else, and the policy below says so.

/** What every dashboard answer carries: no script but ours, no frames, no referrer, no sniffing. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
};

/** dist/ui of the package this module is part of (src/serve/ui and dist/serve/ui are both three deep). */
export function uiDirectory(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'ui');
}

/** The built files, read once each. */
export class UiFiles {
  private readonly cache = new Map<string, Buffer | undefined>();

  private readonly directory: string;

  constructor(directory = uiDirectory()) {
    this.directory = directory;
  }

  private async read(relative: string): Promise<Buffer | undefined> {
    if (this.cache.has(relative)) return this.cache.get(relative);
    const content = await readFile(join(this.directory, relative)).catch(() => undefined);
    this.cache.set(relative, content);
    return content;
  }

  /** Answers /ui/assets/NAME, or the app's page for any other path. */
  async send(response: ServerResponse, path: string, method: string): Promise<void> {
    if (method !== 'GET' && method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      return sendError(response, 405, new SwitchboardError('INVALID_INPUT', 'method not allowed; use GET'));
    }
    const asset = /^\/ui\/assets\/([\w.-]+)$/.exec(path)?.[1];
    if (path.startsWith('/ui/assets/') && (asset === undefined || asset.startsWith('.'))) {
      return sendError(response, 404, new SwitchboardError('INVALID_INPUT', `no such file: ${path}`));
    }
    const relative = asset === undefined ? 'index.html' : join('assets', asset);
    const content = await this.read(relative);
    if (content === undefined) {
      if (asset !== undefined) {
        return sendError(response, 404, new SwitchboardError('INVALID_INPUT', `no such file: ${path}`));
      }
      return sendError(
        response,
        503,
        new SwitchboardError(
          'INVALID_INPUT',
          `the web app is not built: ${this.directory} has no index.html`,
          {
            hint: 'run `npm run build` in the switchboard checkout',
          },
        ),
      );
    }
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type':
        asset === undefined
          ? 'text/html; charset=utf-8'
          : (TYPES[extname(asset)] ?? 'application/octet-stream'),
      'content-length': content.length,
      // Asset names carry their content's hash; the page itself must be asked for again each time.
      'cache-control': asset === undefined ? 'no-store' : 'private, max-age=31536000, immutable',
    });
    response.end(method === 'HEAD' ? undefined : content);
  }
}
