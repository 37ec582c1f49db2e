import { redactDeep, redactSecrets } from './secrets.js';

/**
 * Every failure Switchboard reports is a `SwitchboardError` with a string `code`. Callers branch on
 * `code` (never on `instanceof`, which breaks across duplicated package copies); the CLI maps codes
 * to exit codes and prints `message` plus `hint` as one line.
 */
export const ERROR_CODES = [
  'INVALID_INPUT',
  'CONFIG_INVALID',
  'SKILLS_INVALID',
  'DATASET_INVALID',
  'STORE_ERROR',
  'LEDGER_UNWRITABLE',
  'PORT_IN_USE',
  'DATABASE_UNREACHABLE',
  'DATABASE_AUTH',
  'DATABASE_FOREIGN',
  'RATE_LIMITED',
  'OVERLOADED',
  'AUTH',
  'TIMEOUT',
  'IDLE_TIMEOUT',
  'PARSE',
  'SCHEMA',
  'BUDGET_EXCEEDED',
  'PROVIDER_UNAVAILABLE',
  'PROVIDER_ERROR',
  'MODEL_DOWNGRADED',
  'MAX_TURNS',
  'ABORTED',
  'INTERNAL',
  'AGENT_FAILED',
  'VERIFY_FAILED',
  'MERGE_CONFLICT',
  'TASK_INVALID',
  'NOT_A_GIT_REPO',
  'UNKNOWN_BASE',
  'DIRTY_CHECKOUT',
  'RUN_NOT_FOUND',
  'SETUP_FAILED',
  'REMOTE_UNREACHABLE',
  'WORKFLOW_INVALID',
  'WORKFLOW_TEMPLATE',
  'WORKFLOW_WAITING',
  'WORKFLOW_FAILED',
  'WORKFLOW_LOCKED',
  'WORKFLOW_CHANGED',
  'WORKFLOW_LIMIT',
  'WORKFLOW_CANCELLED',
  'WORKFLOW_LOST',
  'SETTINGS_INVALID',
  'GITHUB_AUTH',
  'GITHUB_NOT_FOUND',
  'FORBIDDEN',
  'ENDPOINT_NOT_ALLOWED',
  'SECRET_IN_CHANGE',
  'GATE_TAKEN',
  'OUTPUT_LIMIT',
  'SERVER_AUTH',
  'FILE_REFUSED',
  'KEY_EXISTS',
  'KEY_NOT_FOUND',
  'RUN_ENDED',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Whether `value` is one of Switchboard's error codes (read back from a ledger, a log or a server). */
export function isErrorCode(value: unknown): value is ErrorCode {
  return (ERROR_CODES as readonly unknown[]).includes(value);
}

/** Codes that are worth retrying by default (the caller may still decide otherwise). */
const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set([
  'RATE_LIMITED',
  'OVERLOADED',
  'TIMEOUT',
  'IDLE_TIMEOUT',
  'PROVIDER_ERROR',
]);

export interface SwitchboardErrorOptions {
  /** What the user can do about it, printed after the message. */
  hint?: string;
  retryable?: boolean;
  provider?: string;
  /** Milliseconds the provider asked us to wait before trying again. */
  retryAfterMs?: number;
  cause?: unknown;
  /** Extra structured detail (file, line, field) for programs reading `--json`. */
  details?: Record<string, unknown>;
}

export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly hint: string | undefined;
  readonly provider: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    // Messages quote servers and processes, which echo keys: every error is clean from birth, so the
    // CLI, `--json`, the ledger and a caller's own logs never see one (`cause` keeps the raw original).
    super(redactSecrets(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.hint = options.hint === undefined ? undefined : redactSecrets(options.hint);
    this.provider = options.provider;
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details === undefined ? undefined : redactDeep(options.details);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      hint: this.hint,
      retryable: this.retryable,
      provider: this.provider,
      retryAfterMs: this.retryAfterMs,
      details: this.details,
    };
  }
}

/** Structural check, so errors from another copy of this package are recognised too. */
export function isSwitchboardError(value: unknown): value is SwitchboardError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { name?: unknown }).name === 'SwitchboardError' &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}

/**
 * Process exit codes. 0 = success, 10 = the router abstained (answered `none`), the rest are errors.
 * Documented in docs/exit-codes.md (test/docs.test.ts checks the table); keep them stable.
 */
export const EXIT_CODES = {
  OK: 0,
  INTERNAL: 1,
  INVALID_INPUT: 2,
  CONFIG_INVALID: 3,
  SKILLS_INVALID: 4,
  DATASET_INVALID: 5,
  STORE_ERROR: 6,
  /** `switchboard serve`: the address is taken by another process. */
  PORT_IN_USE: 7,
  /** The PostgreSQL server in the database URL did not answer (wrong host or port, server down). */
  DATABASE_UNREACHABLE: 8,
  /** The PostgreSQL server refused the URL's user, password or database name. */
  DATABASE_AUTH: 9,
  /** The database holds another application's tables; Switchboard left it untouched. */
  DATABASE_FOREIGN: 11,
  ABSTAINED: 10,
  RATE_LIMITED: 20,
  OVERLOADED: 21,
  AUTH: 22,
  TIMEOUT: 23,
  IDLE_TIMEOUT: 24,
  PARSE: 25,
  SCHEMA: 26,
  BUDGET_EXCEEDED: 27,
  PROVIDER_UNAVAILABLE: 28,
  PROVIDER_ERROR: 29,
  MODEL_DOWNGRADED: 30,
  /** The agent or Claude Code call reached its turn limit; a workflow LLM step's tool loop reached `max_agent_iterations`. */
  MAX_TURNS: 31,
  /** `switchboard agent`: the agent ended without a usable change (after its retries). */
  AGENT_FAILED: 40,
  /** `switchboard agent`: the task's verify command still failed after the retries. */
  VERIFY_FAILED: 41,
  /** `switchboard agent`: the change conflicts with the base branch; the base was left unmoved. */
  MERGE_CONFLICT: 42,
  /** `switchboard agent`: the task file or flags are malformed. */
  TASK_INVALID: 43,
  NOT_A_GIT_REPO: 44,
  UNKNOWN_BASE: 45,
  /** The checkout the merge would update has uncommitted changes; the branch was left for later. */
  DIRTY_CHECKOUT: 46,
  RUN_NOT_FOUND: 47,
  /** `switchboard agent`: the task's setup command failed, or left files git does not ignore. */
  SETUP_FAILED: 48,
  /** `switchboard agent`: the remote repository a task names cannot be read, or refused a push. */
  REMOTE_UNREACHABLE: 49,
  /** `switchboard workflow`: the workflow file or an input is invalid (malformed YAML, unknown key, route to nowhere, missing input); nothing ran. */
  WORKFLOW_INVALID: 50,
  /** `switchboard workflow`: a template or `when` failed at run time; the run stopped there, finished steps kept. */
  WORKFLOW_TEMPLATE: 51,
  /** `switchboard workflow`: the run is parked at a human gate; answer it with `workflow gate`. Not a failure. */
  WORKFLOW_WAITING: 52,
  /** `switchboard workflow`: a step failed (or a terminate step ended the run as failed). */
  WORKFLOW_FAILED: 53,
  /** `switchboard workflow`: another live process is advancing the run; nothing was done. */
  WORKFLOW_LOCKED: 54,
  /** `switchboard workflow resume`: the workflow file changed since the run started; `--migrate` resumes anyway. */
  WORKFLOW_CHANGED: 55,
  /** `switchboard workflow`: `max_iterations`, `timeout_seconds` or a `max_visits` without `on_cap` ended the run; resumable with a higher limit. */
  WORKFLOW_LIMIT: 56,
  /** `switchboard workflow`: the run was cancelled (`workflow cancel`). */
  WORKFLOW_CANCELLED: 57,
  /** `switchboard workflow`: this process lost the run to another (its lock was taken over); it recorded nothing more. */
  WORKFLOW_LOST: 58,
  /** `switchboard hooks`: the Claude Code settings file is not valid JSON (or not settings); it was left untouched. */
  SETTINGS_INVALID: 59,
  /** GitHub: no `GITHUB_TOKEN`, or GitHub refused it (HTTP 401 or 403). */
  GITHUB_AUTH: 60,
  /** GitHub: the issue or repository does not exist, or the token may not see it (HTTP 404). */
  GITHUB_NOT_FOUND: 61,
  /** `workflow gate`: the gate was already answered (the first answer recorded wins); this one was not recorded. */
  GATE_TAKEN: 62,
  /** `switchboard agent`: the agent's change holds a known secret; nothing was committed. */
  SECRET_IN_CHANGE: 63,
  /** `serve`, `/mcp`: the server's settings do not allow this request (Host, Origin, command-running tools, a repository outside the roots). */
  FORBIDDEN: 64,
  /** A spec names a base URL the server's config does not allow (`providers.<name>.endpoints`); nothing was sent. */
  ENDPOINT_NOT_ALLOWED: 65,
  /** `switchboard workflow`: a script step printed more than its `max_output_bytes` on stdout or stderr; it was killed. */
  OUTPUT_LIMIT: 66,
  /** `--server`, `SWITCHBOARD_SERVER`: the server refused the token (none found, or not its own). */
  SERVER_AUTH: 67,
  /** A file Switchboard was handed is no regular file (a FIFO, a device, a folder), or larger than its bound (2 MiB for YAML/JSON); nothing was read past it. */
  FILE_REFUSED: 68,
  /** `keys create`: a virtual key of that name exists already (revoked or not); nothing was created. */
  KEY_EXISTS: 69,
  /** `keys revoke`: no virtual key has that name or id. */
  KEY_NOT_FOUND: 70,
  /** `workflow guide`: the run has ended (completed or cancelled), so no model turn will read the guidance; nothing was recorded. */
  RUN_ENDED: 71,
  /**
   * The ledger cannot be written: its disk is full or its folder (or database) is read-only. Before a call
   * reserved its budget nothing was sent; an answer that came back is kept (exit 0, a warning) instead.
   */
  LEDGER_UNWRITABLE: 75,
  ABORTED: 130,
} as const satisfies Record<string, number>;

export function exitCodeFor(code: ErrorCode): number {
  return (EXIT_CODES as Record<string, number>)[code] ?? EXIT_CODES.INTERNAL;
}
