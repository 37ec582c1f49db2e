/**
 * Conductor keys Switchboard parses but does not act on. Each becomes one warning naming the key path
 * and what to do instead; the run goes on without it. Kept in one table so docs and code agree.
 */

/** Step keys (on `agents[]` entries and for_each inline agents), with why they are ignored. */
export const UNSUPPORTED_STEP_KEYS: Readonly<Record<string, string>> = {
  context_tier: 'context tiers are a Copilot/Claude model-selection feature; choose the model with "model:"',
  max_session_seconds:
    'use "timeout_seconds" for an LLM step, or "limits.wall_clock_seconds" with effects: git',
  dialog: 'interactive dialog is not supported; use a human_gate step with prompt_for',
  sandbox: 'ACA sandboxes are not supported; use effects: git for an isolated worktree',
  skills: 'Copilot/Claude skill injection is not supported; use type: route to pick a skill',
  plugins: 'plugins are not supported',
};

/** `workflow:` keys (dotted below `workflow.`), with why they are ignored. */
export const UNSUPPORTED_WORKFLOW_KEYS: Readonly<Record<string, string>> = {
  'context.max_tokens': 'Switchboard does not trim the template context',
  'context.trim_strategy': 'Switchboard does not trim the template context',
  cost: 'Switchboard prices every call itself (prices: in switchboard.yaml); see switchboard workflow status',
  hooks: 'lifecycle hooks are not supported; use a script step',
  instructions: 'workspace instructions are not prepended; put them in the prompts (a !file works)',
  'runtime.timeout': 'set timeout_seconds on the steps instead',
  'runtime.max_session_seconds': 'set timeout_seconds on the steps instead',
  'runtime.checkpoint': 'Switchboard checkpoints every step, always',
  'runtime.tool_output': "tool output limits are Claude Code's own in Switchboard",
  'runtime.default_context_tier': 'context tiers are not supported; choose the model with "model:"',
  'runtime.skills': 'skill injection is not supported',
  'runtime.skill_injection': 'skill injection is not supported',
  'runtime.skill_discovery': 'skill discovery is not supported; use type: route with a skills folder',
  'runtime.plugin_sources': 'plugins are not supported',
  'runtime.plugins': 'plugins are not supported',
};

/** `runtime.provider` object keys other than `name`: connection settings Switchboard takes elsewhere. */
export const PROVIDER_SETTING_HINT =
  'Switchboard connects through its own providers; map the provider with workflows.provider_map or --provider-map (e.g. copilot=openai@http://127.0.0.1:11434/v1)';
