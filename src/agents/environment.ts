/** Names that look like credentials: an agent's tools and the verify command do not see these. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION/i;

/**
 * The environment an agent run hands down: the parent's, without credentials that are not Claude
 * Code's own. Claude Code runs the commands the model chooses, and the verify command runs code the
 * model wrote; neither should find the orchestrator's OpenAI key or cloud credentials lying around.
 * Kept: everything not named like a secret; `ANTHROPIC_*` and `CLAUDE_*` (Claude Code needs them);
 * `AWS_*` when Claude Code runs on Bedrock and Google's when on Vertex; and the names in `pass`.
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
      !SECRET_NAME.test(name) ||
      /^(ANTHROPIC|CLAUDE)_/.test(name) ||
      (bedrock && name.startsWith('AWS_')) ||
      (vertex && /^(GOOGLE|GCLOUD|CLOUDSDK|CLOUD_ML)_/.test(name)) ||
      pass.includes(name);
    if (needed) kept[name] = value;
  }
  return kept;
}
