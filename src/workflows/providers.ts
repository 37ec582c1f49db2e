import { SwitchboardError } from '../core/errors.js';
import { parseProviderChain, PROVIDER_NAMES } from '../core/call-types.js';
import { unknownToolProblem } from '../agents/task.js';
import type { StepDefinition } from './model.js';
import { FILE_TOOL_NAMES, fileToolFor, mcpToolReference } from './tool-names.js';

/**
 * A workflow step's Conductor provider and model → the Switchboard spec `call()` takes.
 *
 * | Conductor provider | Switchboard          |
 * |--------------------|----------------------|
 * | `claude`           | `anthropic:<model>`  |
 * | `claude-agent-sdk` | `claude:<model>`     |
 * | `openai`           | `openai:<model>`     |
 * | `gemini`           | `gemini:<model>`     |
 * | `copilot`, `hermes`, `aca` | the provider map, else `override`, else Claude Code (`claude:<model>`, see `copilotOnClaudeCode`) |
 * | anything else      | the provider map, else `override` (`--provider`), else an error |
 */
export const CONDUCTOR_PROVIDERS: Readonly<Record<string, string>> = {
  claude: 'anthropic',
  'claude-agent-sdk': 'claude',
  openai: 'openai',
  gemini: 'gemini',
};

/** The model used when neither the step nor `runtime.default_model` names one. */
const DEFAULT_MODELS: Readonly<Record<string, string>> = {
  anthropic: 'claude-sonnet-4-6',
  claude: 'sonnet',
  gemini: '2.5-flash',
};

/** Conductor's default provider when neither the step nor `runtime.provider` names one. */
export const CONDUCTOR_DEFAULT_PROVIDER = 'copilot';

/**
 * Conductor's agent runtimes (GitHub Copilot's, Nous Research's Hermes Agent, an agent in Azure
 * Container Apps sessions): with no Switchboard equivalent of their own, their steps run on Claude
 * Code, the agentic equivalent, unless the provider map or `--provider` says otherwise.
 */
export const AGENT_RUNTIMES: readonly string[] = [CONDUCTOR_DEFAULT_PROVIDER, 'hermes', 'aca'];

/** The model a `copilot` step gets on Claude Code when its own is not a Claude model (GPT, Gemini, …). */
const COPILOT_FALLBACK_MODEL = 'sonnet';

/**
 * A `copilot` step (GitHub Copilot's agent runtime, Conductor's default) unmapped: Claude Code is the
 * agentic equivalent. A Claude model keeps its name (`claude-haiku-4.5` → `claude:claude-haiku-4-5`);
 * any other model becomes Claude Code's `sonnet`, since Claude Code runs Claude models only.
 */
export function copilotOnClaudeCode(model: string | undefined): string {
  const native = model === undefined ? undefined : nativeModelName('claude', model);
  return `claude:${native !== undefined && /^(claude-|opus|sonnet|haiku)/.test(native) ? native : COPILOT_FALLBACK_MODEL}`;
}

export interface StepSpecRequest {
  /** The step's `provider:` as written. */
  provider?: string | undefined;
  /** The step's `model:` (rendered, when it was a template). */
  model?: string | undefined;
  /** The workflow's `runtime.provider` name and `runtime.default_model`. */
  runtime?: { provider?: string | undefined; defaultModel?: string | undefined } | undefined;
  /** `workflows.provider_map` + `--provider-map`: Conductor provider name → spec, chain, role or provider prefix. */
  providerMap?: Readonly<Record<string, string>> | undefined;
  /** `--provider`: the spec for steps whose provider Switchboard cannot map itself. */
  override?: string | undefined;
  /** Roles from switchboard.yaml (`drafter: claude:sonnet,anthropic:claude-sonnet-4-5`). */
  roles?: Readonly<Record<string, string>> | undefined;
  /** For messages: the step's name and the workflow file. */
  step?: string | undefined;
  file?: string | undefined;
}

/**
 * Resolves a step's spec. A model that is already a Switchboard spec or chain (`claude:haiku`) or a
 * role is used as is. Otherwise the provider (step, then runtime, then Conductor's default `copilot`)
 * is looked up in the provider map first (so a user may remap even `claude`), then in Conductor's
 * names, then `override` applies, then `copilot` runs on Claude Code; a provider none of these maps is
 * a WORKFLOW_INVALID error.
 * A map value or override that names only a provider (`anthropic`, `openai@http://127.0.0.1:11434/v1`)
 * gets the step's model appended; one that names a model (`claude:sonnet`) is used as is.
 */
export function resolveStepSpec(request: StepSpecRequest): string {
  const model = nonEmpty(request.model) ?? nonEmpty(request.runtime?.defaultModel);
  const roles = request.roles ?? {};
  if (model !== undefined && (isSpecOrChain(model) || roles[model] !== undefined))
    return roles[model] ?? model;
  const provider =
    nonEmpty(request.provider) ?? nonEmpty(request.runtime?.provider) ?? CONDUCTOR_DEFAULT_PROVIDER;
  const mapped = request.providerMap?.[provider];
  if (mapped !== undefined)
    return applyTarget(mapped, model, roles, request, `the provider map's ${provider}=`);
  const native = CONDUCTOR_PROVIDERS[provider];
  if (native !== undefined) return withModel(native, model, request);
  if (nonEmpty(request.override) !== undefined)
    return applyTarget(request.override as string, model, roles, request, '--provider ');
  if (AGENT_RUNTIMES.includes(provider)) return copilotOnClaudeCode(model);
  throw new SwitchboardError(
    'WORKFLOW_INVALID',
    `${where(request)}provider "${provider}" has no Switchboard equivalent`,
    {
      hint: `map it: --provider-map ${provider}=claude:sonnet (or workflows.provider_map in switchboard.yaml), or pass --provider SPEC`,
      details: { file: request.file, step: request.step, field: 'provider' },
    },
  );
}

/**
 * Conductor (Copilot) model names → the provider's own: `claude-haiku-4.5` → `claude-haiku-4-5`,
 * `anthropic/claude-sonnet-4` → `claude-sonnet-4` for Anthropic and Claude Code, `google/…` for Gemini.
 * The `-1m` long-context suffix of Copilot names is dropped (Switchboard does not select that variant).
 */
export function nativeModelName(provider: string, model: string): string {
  let name = model.trim();
  if (provider === 'anthropic' || provider === 'claude') name = name.replace(/^anthropic\//, '');
  if (provider === 'gemini') name = name.replace(/^google\//, '');
  if (/^claude-/.test(name)) {
    name = name.replace(/-1m$/i, '').replace(/(\d+)\.(\d+)/g, '$1-$2');
  }
  return name;
}

/** `claude:haiku`, `openai@http://…:model`, `claude:sonnet,anthropic:claude-sonnet-4-5`. */
export function isSpecOrChain(text: string): boolean {
  const parts = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  return parts.length > 0 && parts.every((part) => splitTarget(part)?.model !== undefined);
}

/** `name`, `name:model`, `name@http://host:port/path` or `name@http://host:port/path:model`, for a known provider. */
function splitTarget(text: string): { prefix: string; model?: string } | undefined {
  const match = /^([a-z][a-z0-9-]*)(@https?:\/\/[^/:\s]+(?::\d+)?(?:\/[^:\s]*)?)?(?::(\S+))?$/i.exec(
    text.trim(),
  );
  if (match === null) return undefined;
  const name = (match[1] as string).toLowerCase();
  if (!(PROVIDER_NAMES as readonly string[]).includes(name)) return undefined;
  const prefix = `${name}${match[2] ?? ''}`;
  return match[3] === undefined ? { prefix } : { prefix, model: match[3] };
}

function applyTarget(
  target: string,
  model: string | undefined,
  roles: Readonly<Record<string, string>>,
  request: StepSpecRequest,
  source: string,
): string {
  const trimmed = target.trim();
  if (roles[trimmed] !== undefined) return roles[trimmed];
  if (isSpecOrChain(trimmed)) return trimmed;
  const split = splitTarget(trimmed);
  if (split !== undefined) return withModel(split.prefix, model, request);
  throw new SwitchboardError(
    'WORKFLOW_INVALID',
    `${where(request)}${source}${trimmed} is neither a spec, a role nor a provider`,
    {
      hint: `write a spec (claude:sonnet), a provider (${PROVIDER_NAMES.join(', ')}, openai@http://127.0.0.1:11434/v1) or a role from switchboard.yaml`,
      details: { file: request.file, step: request.step, field: 'provider' },
    },
  );
}

function withModel(prefix: string, model: string | undefined, request: StepSpecRequest): string {
  const provider = prefix.split('@')[0] as string;
  const chosen = model ?? DEFAULT_MODELS[provider];
  if (chosen === undefined) {
    throw new SwitchboardError('WORKFLOW_INVALID', `${where(request)}no model for ${prefix}`, {
      hint: 'set model: on the step or runtime.default_model in the workflow',
      details: { file: request.file, step: request.step, field: 'model' },
    });
  }
  return `${prefix}:${nativeModelName(provider, chosen)}`;
}

function where(request: StepSpecRequest): string {
  const file = request.file === undefined ? '' : `${request.file}: `;
  return request.step === undefined ? file : `${file}step "${request.step}": `;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A step's provider and model as written, for `agentRuntimeNotices` and `ignoredToolsNotices`. */
export interface WrittenStep {
  name?: string | undefined;
  provider?: string | undefined;
  model?: string | undefined;
  tools?: readonly string[] | undefined;
  sessionKey?: string | undefined;
}

/**
 * One line per step on an API provider whose `tools:` names Claude Code tools with no equivalent there
 * (`Bash`, `Write`, `WebFetch`, …): the step's tool loop runs without them. (`Read`, `Glob` and `Grep`
 * run as the file tools.) Steps whose spec cannot be resolved here (a templated model, a provider
 * mapped nowhere) are left to the run.
 */
export function ignoredToolsNotices(
  steps: readonly WrittenStep[],
  request: Pick<StepSpecRequest, 'runtime' | 'providerMap' | 'override' | 'roles'>,
): string[] {
  const notices: string[] = [];
  for (const step of steps) {
    if (step.tools === undefined || step.tools.length === 0) continue;
    const spec = apiSpecOf(step, request);
    if (spec === undefined) continue;
    const left = step.tools.filter(
      (tool) => fileToolFor(tool) === undefined && unknownToolProblem(tool) === undefined,
    );
    if (left.length > 0)
      notices.push(
        `step "${step.name ?? '?'}" runs on ${spec}, which has no ${left.join(', ')}: left out of its tools (steps on the API providers run ${FILE_TOOL_NAMES.join(', ')} and MCP tools; run it on Claude Code, claude-agent-sdk, for the others)`,
      );
  }
  return notices;
}

/**
 * The spec a step runs on when that is an API provider (not Claude Code); undefined when it runs on
 * Claude Code or cannot be resolved before the run (a templated model, a provider mapped nowhere).
 */
function apiSpecOf(
  step: WrittenStep,
  request: Pick<StepSpecRequest, 'runtime' | 'providerMap' | 'override' | 'roles'>,
): string | undefined {
  if (step.model?.includes('{{') === true) return undefined;
  try {
    const spec = resolveStepSpec({ ...request, provider: step.provider, model: step.model });
    return usesClaudeCode(spec) ? undefined : spec;
  } catch {
    return undefined;
  }
}

/**
 * One line per step with a `session_key` on an API provider: sessions are Claude Code's, so each of
 * its executions starts a new conversation there.
 */
export function sessionKeyNotices(
  steps: readonly WrittenStep[],
  request: Pick<StepSpecRequest, 'runtime' | 'providerMap' | 'override' | 'roles'>,
): string[] {
  const notices: string[] = [];
  for (const step of steps) {
    const spec = step.sessionKey === undefined ? undefined : apiSpecOf(step, request);
    if (spec === undefined) continue;
    notices.push(
      `step "${step.name ?? '?'}" runs on ${spec}: its session_key "${step.sessionKey}" is not continued there (a session is Claude Code's; run the step on claude-agent-sdk to continue it), so each execution starts anew`,
    );
  }
  return notices;
}

/**
 * One line per agent runtime (`copilot`, written or Conductor's default, `hermes`, `aca`) whose steps
 * run on Claude Code because nothing maps it: each model and the spec it became, and how to choose
 * otherwise. Empty when no step is mapped that way.
 */
export function agentRuntimeNotices(
  steps: readonly WrittenStep[],
  request: Pick<StepSpecRequest, 'runtime' | 'providerMap' | 'override' | 'roles'>,
): string[] {
  if (nonEmpty(request.override) !== undefined) return [];
  const mapped = new Map<string, Map<string, string>>();
  for (const step of steps) {
    const model = nonEmpty(step.model) ?? nonEmpty(request.runtime?.defaultModel);
    if (model !== undefined && (isSpecOrChain(model) || request.roles?.[model] !== undefined)) continue;
    const provider =
      nonEmpty(step.provider) ?? nonEmpty(request.runtime?.provider) ?? CONDUCTOR_DEFAULT_PROVIDER;
    if (!AGENT_RUNTIMES.includes(provider) || request.providerMap?.[provider] !== undefined) continue;
    const models = mapped.get(provider) ?? new Map<string, string>();
    models.set(model ?? '(no model)', copilotOnClaudeCode(model));
    mapped.set(provider, models);
  }
  return [...mapped].map(([provider, models]) => {
    const pairs = [...models].map(([model, spec]) => `${model} → ${spec}`).join(', ');
    const other = [...models.values()].includes(`claude:${COPILOT_FALLBACK_MODEL}`)
      ? ` (Claude Code runs Claude models only: others get ${COPILOT_FALLBACK_MODEL})`
      : '';
    return `provider ${provider} runs on Claude Code: ${pairs}${other}; choose another with --provider-map ${provider}=SPEC or workflows.provider_map in switchboard.yaml`;
  });
}

/** Whether a spec or chain has Claude Code (`claude:`) in it; a bad spec is left to `call()` to report. */
export function usesClaudeCode(spec: string): boolean {
  try {
    return parseProviderChain(spec).some((entry) => entry.provider === 'claude');
  } catch {
    return false;
  }
}

/**
 * One line per step whose `tools:` names a tool by its own name (Conductor's workflow-level `tools:`,
 * `web_search`) that no server of `runtime.mcp_servers` lists: nothing is known to offer it, so the
 * step runs without it unless a server that allows all its tools (`*`) offers one of that name when it
 * starts. Such a name passes `validate` (it is declared), and was once left out without a word.
 */
export function unofferedToolsNotices(
  steps: readonly WrittenStep[],
  mcpServers: Readonly<Record<string, { tools: readonly string[] }>>,
): string[] {
  const servers = Object.keys(mcpServers);
  const open = servers.filter((server) => mcpServers[server]?.tools.includes('*') === true);
  const notices: string[] = [];
  for (const step of steps) {
    const unoffered = (step.tools ?? []).filter(
      (tool) =>
        fileToolFor(tool) === undefined &&
        unknownToolProblem(tool) !== undefined &&
        mcpToolReference(tool, servers)?.server === undefined &&
        !servers.some((server) => mcpServers[server]?.tools.includes(tool.trim()) === true),
    );
    if (unoffered.length === 0) continue;
    const names = unoffered.join(', ');
    notices.push(
      open.length === 0
        ? `step "${step.name ?? '?'}": ${names} names no tool a server of runtime.mcp_servers offers: left out of its tools (list it in a server's tools: under runtime.mcp_servers, or name a file tool or a Claude Code tool)`
        : `step "${step.name ?? '?'}": ${names} names no tool a server of runtime.mcp_servers lists: left out of its tools unless ${open.join(', ')} (which allows all its tools) offers one by that name when the step starts it (name it as server__tool to have a missing tool fail the step)`,
    );
  }
  return notices;
}

/**
 * What `run` and `validate` say of a workflow's LLM steps (the agent steps without `effects: git`):
 * which run on Claude Code for want of a mapping (`agentRuntimeNotices`), which of their tools will
 * not run (`ignoredToolsNotices`), and which name a tool nothing is known to offer (`unofferedToolsNotices`).
 */
export function stepProviderNotices(
  steps: readonly StepDefinition[],
  request: Pick<StepSpecRequest, 'runtime' | 'providerMap' | 'override' | 'roles'>,
  mcpServers: Readonly<Record<string, { tools: readonly string[] }>> = {},
): string[] {
  const written = steps.flatMap((step) =>
    step.type === 'agent' && step.git === undefined
      ? [
          {
            name: step.name,
            provider: step.provider,
            model: step.model,
            tools: step.tools,
            sessionKey: step.sessionKey,
          },
        ]
      : [],
  );
  return [
    ...agentRuntimeNotices(written, request),
    ...ignoredToolsNotices(written, request),
    ...sessionKeyNotices(written, request),
    ...unofferedToolsNotices(written, mcpServers),
  ];
}
