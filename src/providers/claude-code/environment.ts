/** Where a Claude Code process connects, and how. */
export interface ClaudeEnvironmentOptions {
  /** API base URL (`ANTHROPIC_BASE_URL`), e.g. a `switchboard sim` address. */
  baseUrl?: string | undefined;
  /** API key (`ANTHROPIC_API_KEY`); otherwise Claude Code's own login or environment. */
  apiKey?: string | undefined;
  /** Claude Code's configuration folder (`CLAUDE_CONFIG_DIR`). */
  configDir?: string | undefined;
  /** Extra environment variables. */
  env?: Record<string, string> | undefined;
  /** Claude Code's own API retries (`CLAUDE_CODE_MAX_RETRIES`). @default 0 */
  maxRetries?: number | undefined;
}

/**
 * The environment of a Claude Code process: the parent's, with Claude Code's own retries off (Switchboard
 * decides about retries) and its side requests (title generation and the like) turned off, since they
 * double the traffic of a headless call. Holds the API key: never log or store it.
 */
export function claudeEnvironment(
  { baseUrl, apiKey, configDir, env = {}, maxRetries = 0 }: ClaudeEnvironmentOptions = {},
  parent: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const environment: Record<string, string> = {
    ...(Object.fromEntries(
      Object.entries(parent).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ) as Record<string, string>),
    ...env,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: String(maxRetries),
  };
  if (baseUrl !== undefined) environment['ANTHROPIC_BASE_URL'] = baseUrl;
  if (apiKey !== undefined) environment['ANTHROPIC_API_KEY'] = apiKey;
  if (configDir !== undefined) environment['CLAUDE_CONFIG_DIR'] = configDir;
  return environment;
}
