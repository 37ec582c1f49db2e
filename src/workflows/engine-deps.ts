// What the engine uses from the format and template modules, in one place. Provider resolution is
// imported when a workflow has LLM steps (engine-session.ts): it loads the provider registry.
export {
  coerceJson,
  evaluateCondition,
  evaluateValue,
  renderTemplate,
  type TemplateWhere,
} from './template.js';
export type { resolveStepSpec } from './providers.js';
export { resolveInputs } from './inputs.js';
export { loadWorkflow } from './format/index.js';
