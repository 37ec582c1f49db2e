// The API contract's names the app uses (src/serve/ui/api-types.ts), in one place.

export type { GraphGroup, GraphRoute, GraphStep, PendingGate, StepView } from '../serve/ui/api-types.js';
