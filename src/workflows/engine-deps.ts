// What the engine uses from the template and input modules, in one place. Provider resolution is
// imported when a workflow has LLM steps (engine-session.ts): it loads the provider registry. The
// format (zod, YAML) is imported when a file is loaded (engine-load.ts).
export {
  coerceJson,
  evaluateCondition,
  evaluateValue,
  renderTemplate,
  type TemplateWhere,
} from './template.js';
export type { resolveStepSpec } from './providers.js';
export { resolveInputs } from './inputs.js';
