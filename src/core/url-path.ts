import { SwitchboardError, type ErrorCode } from './errors.js';

/** `scheme://…`: a URL, never a file or folder name (`C:\…` and `./a:b` do not match). */
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

export function hasUrlScheme(value: string): boolean {
  return URL_SCHEME.test(value.trim());
}

/** The value with any `user:password@` reduced to `user@`, for messages: a URL's password is never shown. */
export function withoutPassword(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@]*)@/i, (_, scheme: string, credentials: string) => {
    const user = credentials.split(':')[0] ?? '';
    return `${scheme}${user === '' ? '' : `${user}@`}`;
  });
}

/**
 * Refuses a URL given where a file or folder is expected: resolved as a path it would name a file under
 * `./postgres:/…` (with the password in its name), and the database the user meant would go unused.
 */
export function refuseUrlAsPath(
  value: string | undefined,
  what: string,
  code: ErrorCode = 'INVALID_INPUT',
): void {
  if (value === undefined || !hasUrlScheme(value)) return;
  throw new SwitchboardError(code, `${what} ${withoutPassword(value.trim())} is a URL, not a path`, {
    hint: 'give a database URL as SWITCHBOARD_DATABASE_URL (or database_url in switchboard.yaml), and a folder or file path here',
  });
}
