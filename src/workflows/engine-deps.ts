// The engine's imports from the other helpers' modules. Templates are the real ones; the provider
// resolution, the file loader and the input coercion are INTERIM stand-ins until ./providers.js,
// ./format/load.js and ./inputs.js are on this branch, when they become plain re-exports.
import { SwitchboardError } from '../core/errors.js';
import { coerceJson } from './template.js';
import type { WorkflowDefinition, WorkflowRuntime } from './model.js';

export {
  coerceJson,
  evaluateCondition,
  evaluateValue,
  renderTemplate,
  type TemplateWhere,
} from './template.js';

export function resolveStepSpec(options: {
  provider: string | undefined;
  model: string | undefined;
  runtime?: WorkflowRuntime;
  providerMap?: Record<string, string>;
  override?: string;
  step?: string;
  file?: string;
}): string {
  const provider = options.provider ?? options.runtime?.provider;
  const model = options.model ?? options.runtime?.defaultModel;
  if (model !== undefined && model.includes(':')) return model;
  const mapped = provider === undefined ? undefined : options.providerMap?.[provider];
  if (mapped !== undefined) return mapped;
  if (options.override !== undefined) return options.override;
  const prefix = { claude: 'anthropic', 'claude-agent-sdk': 'claude', openai: 'openai', gemini: 'gemini' }[
    provider ?? ''
  ];
  if (prefix === undefined || model === undefined) {
    throw new SwitchboardError('WORKFLOW_INVALID', `provider "${provider ?? ''}" has no Switchboard spec`, {
      hint: 'map it with --provider-map name=spec or give --provider',
    });
  }
  return `${prefix}:${model}`;
}

export async function loadWorkflow(file: string): Promise<WorkflowDefinition> {
  throw new SwitchboardError(
    'INTERNAL',
    `cannot load ${file}: the workflow format is not on this branch yet`,
  );
}

/** Typed inputs: declared defaults applied, required ones checked, `-i name=value` strings coerced. */
export function resolveInputs(
  workflow: WorkflowDefinition,
  raw: Record<string, unknown> = {},
): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const [name, definition] of Object.entries(workflow.input)) {
    let value = raw[name] ?? definition.default;
    if (value === undefined) {
      if (definition.required) {
        throw new SwitchboardError('WORKFLOW_INVALID', `${workflow.file}: input "${name}" is missing`, {
          hint: `give it with -i ${name}=…`,
        });
      }
      continue;
    }
    if (typeof value === 'string' && definition.type !== 'string') value = coerceJson(value);
    inputs[name] = value;
  }
  for (const [name, value] of Object.entries(raw)) if (!(name in inputs)) inputs[name] = value;
  return inputs;
}
