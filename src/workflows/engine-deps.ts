// What the engine uses from the format and template modules, in one place.
export {
  coerceJson,
  evaluateCondition,
  evaluateValue,
  renderTemplate,
  type TemplateWhere,
} from './template.js';
export { resolveStepSpec } from './providers.js';
export { resolveInputs } from './inputs.js';
export { loadWorkflow } from './format/index.js';
