import { isRegisteredSecret, SECRET_VARIABLE_NAME } from '../core/secrets.js';

/**
 * Names that look like credentials: an agent's tools, the verify command and a step's stdio MCP servers do
 * not see these (`GITHUB_PAT`, `SENTRY_DSN` and `SSH_PRIVATE_KEY` included; `PWD` and `PATH` are not).
 */
const SECRET_NAME = new RegExp(
  `${SECRET_VARIABLE_NAME.source}|AUTH|COOKIE|SESSION|(^|_)(PAT|DSN)($|_)`,
  SECRET_VARIABLE_NAME.flags,
);

/** A URL carrying a password (`postgres://user:password@host/db`): a credential whatever its name. */
const URL_WITH_PASSWORD = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]+@/;

/** Switchboard's own ledger database: the runner's to write, not the agent's commands'. */
const LEDGER_VARIABLE = 'SWITCHBOARD_DATABASE_URL';

/**
 * The credentials Switchboard itself holds (its providers' keys, Claude Code's logins, the server's
 * token, the ledger): never handed to an agent's commands, whatever a task's `pass_env` asks, since
 * a task can come from an HTTP caller and the agent's Bash or the verify command could print them.
 */
export const SWITCHBOARD_CREDENTIALS: readonly string[] = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'OPENAI_API_KEY',
  'GEMINI_API_KEY',
  'GEMINI_API_KEYS',
  'GOOGLE_API_KEY',
  'SWITCHBOARD_SERVER_TOKEN',
  LEDGER_VARIABLE,
];

/**
 * The environment an agent run hands down to the commands it runs (Claude Code's tools, the verify and
 * setup commands): the parent's, without credentials, and without the values a `.env` file supplied. Claude Code runs the commands the model chooses,
 * and the verify command runs code the model wrote; neither should find the orchestrator's keys lying
 * around, Claude Code's own API key included (Claude Code reaches the API through a key forwarder;
 * see `startConfinement`). Kept: everything not named like a secret, holding no URL with a password and
 * not the ledger's `SWITCHBOARD_DATABASE_URL`; `AWS_*` when Claude Code runs on
 * Bedrock and Google's when on Vertex; and the names in `pass`, except `SWITCHBOARD_CREDENTIALS`
 * (task validation refuses those already; this holds for tasks built without it).
 */
export function agentEnvironment(
  parent: NodeJS.ProcessEnv = process.env,
  pass: readonly string[] = [],
): Record<string, string> {
  const bedrock = parent['CLAUDE_CODE_USE_BEDROCK'] === '1';
  const vertex = parent['CLAUDE_CODE_USE_VERTEX'] === '1';
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    const needed =
      (!SECRET_NAME.test(name) &&
        !isRegisteredSecret(value) &&
        !URL_WITH_PASSWORD.test(value) &&
        name !== LEDGER_VARIABLE) ||
      (bedrock && name.startsWith('AWS_')) ||
      (vertex && /^(GOOGLE|GCLOUD|CLOUDSDK|CLOUD_ML)_/.test(name)) ||
      (pass.includes(name) && !SWITCHBOARD_CREDENTIALS.includes(name));
    if (needed) kept[name] = value;
  }
  return kept;
}

/**
 * Claude Code's own settings and the credentials it can only read from its environment
 * (`ANTHROPIC_AUTH_TOKEN`, `CLAUDE_CODE_OAUTH_TOKEN`): every `ANTHROPIC_*` and `CLAUDE_*` variable,
 * from the environment or `.env`, except `ANTHROPIC_API_KEY`, which stays with the key forwarder.
 */
export function claudeCodeVariables(parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined || name === 'ANTHROPIC_API_KEY') continue;
    if (/^(ANTHROPIC|CLAUDE)_/.test(name)) variables[name] = value;
  }
  return variables;
}
