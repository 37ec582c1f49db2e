// INTERIM: the engine's imports from the format helper's and the template helper's modules, which are not
// on this branch yet. At the merge this file becomes plain re-exports of ./template.js, ./providers.js and
// ./format/load.js; nothing else in the engine changes.
import { Template } from '@huggingface/jinja';
import { SwitchboardError } from '../core/errors.js';
import type { WorkflowDefinition, WorkflowRuntime } from './model.js';

export interface TemplateWhere {
  file?: string;
  step?: string;
  field: string;
}

function templateError(where: TemplateWhere, what: string): SwitchboardError {
  const place = `${where.file ?? 'workflow'}: ${where.step === undefined ? '' : `step "${where.step}" `}field "${where.field}"`;
  return new SwitchboardError('WORKFLOW_TEMPLATE', `${place}: ${what}`);
}

export function renderTemplate(source: string, scope: Record<string, unknown>, where: TemplateWhere): string {
  try {
    return new Template(source).render(scope);
  } catch (error) {
    throw templateError(where, error instanceof Error ? error.message : String(error));
  }
}

function bare(expression: string): string {
  const match = /^\s*\{\{([\s\S]*)\}\}\s*$/.exec(expression);
  return (match?.[1] ?? expression).trim();
}

export function evaluateCondition(
  expression: string,
  scope: Record<string, unknown>,
  where: TemplateWhere,
): boolean {
  return renderTemplate(`{% if ${bare(expression)} %}1{% endif %}`, scope, where) === '1';
}

export function evaluateValue(
  expression: string,
  scope: Record<string, unknown>,
  where: TemplateWhere,
): unknown {
  return coerceJson(renderTemplate(`{{ ${bare(expression)} | tojson }}`, scope, where));
}

export function coerceJson(text: string): unknown {
  const trimmed = text.trim();
  if (/^[[{"]|^-?\d|^(true|false|null)$/.test(trimmed)) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

export function resolveStepSpec(options: {
  provider: string | undefined;
  model: string | undefined;
  runtime?: WorkflowRuntime;
  providerMap?: Record<string, string>;
  override?: string;
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
