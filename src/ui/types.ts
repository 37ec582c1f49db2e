// Names for parts of the API contract (src/serve/ui/api-types.ts) that it does not export by name.

import type { WorkflowGraph, WorkflowRunResult } from '../serve/ui/api-types.js';

export type StepView = WorkflowRunResult['steps'][number];
export type PendingGate = NonNullable<WorkflowRunResult['gate']>;
export type GraphStep = WorkflowGraph['steps'][number];
export type GraphGroup = WorkflowGraph['groups'][number];
