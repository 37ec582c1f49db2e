// The dashboard's JSON API: what `serve --ui` and `switchboard ui` answer under /ui/api, and what the web
// app (src/ui) reads. Types only, so the web app imports them without pulling server code into its
// bundle. Every field is optional to a reader unless marked otherwise; adding one never breaks a reader.

import type { GraphGroup, GraphRoute, GraphStep, WorkflowGraph } from '../../workflows/graph.js';
import type {
  PendingGate,
  StepTokens,
  StepView,
  WorkflowEventRecord,
  WorkflowGuidance,
  WorkflowRunResult,
} from '../../workflows/api-types.js';
import type { PutQuestion } from '../../workflows/questions.js';

export type {
  GraphGroup,
  GraphRoute,
  GraphStep,
  PendingGate,
  PutQuestion,
  StepTokens,
  StepView,
  WorkflowEventRecord,
  WorkflowGraph,
  WorkflowRunResult,
};

/** What the runs list holds: workflow runs, agent runs and single calls. */
export type RunKind = 'workflow' | 'agent' | 'call';

/**
 * One row of the runs list. `status` is the run's own: a workflow's `running|waiting|completed|failed|
 * cancelled` (and `interrupted` when the process advancing it is gone), an agent run's
 * `running|succeeded|failed|conflict|cancelled`, a call's `succeeded|failed`.
 */
export interface RunSummary {
  kind: RunKind;
  id: string;
  /** The workflow's name, the agent task's title, or the call's provider spec. */
  name: string;
  status: string;
  /** ISO times. */
  startedAt: string;
  endedAt?: string;
  durationMs?: number;
  /** Absent for a call none of whose attempts was priced (its model is not in the price table). */
  costUsd?: number;
  /** A workflow parked at a gate: the gate's step name. */
  waitingGate?: string;
  /** The machine advancing (or that last advanced) it. */
  host?: string;
  tags?: Record<string, string>;
  /** A sub-workflow's parent run; a call made by a workflow run or agent run: that run. */
  parentRunId?: string;
  /** What `parentRunId` is. */
  parentKind?: 'workflow' | 'agent';
  /** Workflows: the current or last step. Agent runs: the phase. */
  step?: string;
}

/** GET /ui/api/runs: query parameters (all optional). */
export interface RunListQuery {
  kind?: RunKind;
  status?: string;
  /** Workflow name (exact), or for calls the spec. */
  name?: string;
  /** `key=value`: calls carrying that tag, and the workflow and agent runs whose calls carry it. */
  tag?: string;
  host?: string;
  /** ISO time or epoch ms: started at or after / before. */
  since?: string;
  until?: string;
  /** The `next` of the previous page. */
  cursor?: string;
  /** Rows per page, 1–200. @default 50 */
  limit?: number;
}

export interface RunList {
  runs: RunSummary[];
  /** Pass as `cursor` for the next (older) page; absent on the last page. */
  next?: string;
}

/** GET /ui/api/runs/:id — a workflow run. */
export interface RunDetail {
  summary: RunSummary;
  /** As `workflow status --json` shows it: steps (one row per execution), gate, output, error. */
  run: WorkflowRunResult;
  /** The workflow's shape from its `run-start` event; absent for runs recorded before events had it. */
  graph?: WorkflowGraph;
  /** The workflow file's text as the run started it (runs recorded before runs kept it: absent). */
  source?: string;
  /** Sub-workflow runs it started. */
  children: RunSummary[];
  /** The seq of its latest event: the stream and the events endpoint continue after it. */
  lastSeq: number;
  /** Budget of the run (limits.budget_usd) when it has one. */
  budgetUsd?: number;
}

/** GET /ui/api/runs/:id/events?after=SEQ&limit=N (N ≤ 5,000, default 1,000): oldest first. */
export interface EventPage {
  events: WorkflowEventRecord[];
  lastSeq: number;
  /** More events after the last one returned. */
  more: boolean;
}

/** One event of an agent run's log. */
export interface AgentEvent {
  at: string;
  phase: string;
  kind: string;
  message: string;
  data?: unknown;
}

/** GET /ui/api/agents/:id — an agent run. */
export interface AgentDetail {
  summary: RunSummary;
  taskId: string;
  title: string;
  /** The task's prompt as recorded. */
  prompt?: string;
  repo: string;
  baseBranch: string;
  branch: string;
  phase: string;
  attempt: number;
  commit?: string;
  mergedCommit?: string;
  merge?: string;
  pullRequest?: { number?: number; url?: string };
  errorCode?: string;
  error?: string;
  /** The git output of a conflict, or the tail of a failed verify. */
  detail?: string;
  events: AgentEvent[];
  /** `git diff base..commit` (or of the branch), cut at 200,000 characters; absent when the repo is gone. */
  diff?: string;
  diffTruncated?: boolean;
}

/** GET /ui/api/calls/:id — one call and its attempts. */
export interface CallDetail {
  summary: RunSummary;
  attempts: Array<{
    attempt: number;
    at: string;
    provider: string;
    spec: string;
    modelRequested: string;
    modelUsed?: string;
    success: boolean;
    errorCode?: string;
    durationMs: number;
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    costUsd?: number;
  }>;
}

/** A total of spend under one key. */
export interface SpendRow {
  key: string;
  costUsd: number;
  calls: number;
}

/** GET /ui/api/costs?since=&until= (default: the last 30 days). */
export interface CostReport {
  since: string;
  until: string;
  totalUsd: number;
  calls: number;
  byProvider: SpendRow[];
  byModel: SpendRow[];
  /** `key=value` of every tag. */
  byTag: SpendRow[];
  byWorkflow: SpendRow[];
  /** Days (UTC, `YYYY-MM-DD`), oldest first, each with its spend per provider. */
  byDay: Array<{ day: string; costUsd: number; byProvider: Record<string, number> }>;
  /** The budgets of switchboard.yaml: spent in their current window against the limit. */
  budgets: Array<{ name: string; window: string; limitUsd: number; spentUsd: number }>;
}

/** GET /ui/api/routing?since=&until= (default: the last 30 days). */
export interface RoutingReport {
  since: string;
  until: string;
  decisions: number;
  /** Decisions whose skill is `none`, over all. */
  abstainRate: number;
  /** Decisions by method (`cache`, `rules`, `local`, `llm`, `fallback`, `default`). */
  tierMix: Record<string, number>;
  bySkill: Array<{ skill: string; decisions: number }>;
  /** Days (UTC), oldest first. */
  byDay: Array<{ day: string; decisions: number; abstained: number; byMethod: Record<string, number> }>;
  /** The latest decisions below the low-confidence line, newest first (at most 50). */
  lowConfidence: Array<{
    id: string;
    at: string;
    skill: string;
    confidence: number;
    method: string;
    /** The request's text when the ledger stores texts; otherwise absent. */
    text?: string;
  }>;
  lowConfidenceBelow: number;
  /** Corrections recorded with `route feedback`, newest first (at most 50). */
  feedback: Array<{ decisionId: string; chosen?: string; corrected: string; at: string }>;
}

/** GET /ui/api/session: what the page needs to know about the server. */
export interface SessionInfo {
  version: string;
  /** `sqlite` or `postgres`. */
  database: string;
  /** The ledger's file, or the PostgreSQL URL without its password. */
  location: string;
  host: string;
  /** Whether this server answers gates, cancels and resumes (false: the page is read-only). */
  actions: boolean;
}

/** POST /ui/api/runs/:id/gate body. */
export interface GateAnswerBody {
  /** The gate's step; default: the gate the run is parked at. */
  step?: string;
  /** An option's value; for a questions step `answer`, `skip_all` or `abort`. */
  choice: string;
  /** Text for the option's `prompt_for`. */
  text?: string;
  /** A questions step's answers by question id. */
  answers?: Record<string, string>;
}

/** POST /ui/api/runs/:id/guide body: guidance for the run's next model turn (of `step`, when given). */
export interface GuidanceBody {
  text: string;
  step?: string;
}

/**
 * What POST /ui/api/runs/:id/{gate,guide,cancel,resume} answer (200; 202 when the run goes on in the
 * background). A gate that already has an answer is 409 with `error.code` `GATE_TAKEN`; guidance for a
 * run that has ended is 409 `RUN_ENDED`.
 */
export interface ActionResult {
  run: WorkflowRunResult;
  /** The run goes on in this server's process. */
  continuing: boolean;
  /** When it does not: how the user continues it (a CLI command). */
  message?: string;
  /** POST …/guide: the guidance recorded. */
  guidance?: WorkflowGuidance;
}

/**
 * GET /ui/api/stream — Server-Sent Events. Query:
 * - `run=<id>&after=<seq>`: `event: workflow-event` with a WorkflowEventRecord for each new event,
 *   `event: run` with the run's RunSummary when its row changes.
 * - `agent=<id>&after=<n>`: `event: agent-event` with an AgentEvent (n: events already shown),
 *   `event: run` with its RunSummary when it changes.
 * - neither: `event: runs` with the RunSummary[] of workflow and agent runs changed since the last.
 * The server sends `: ping` comments every 15 s; the page reconnects with EventSource's own retry.
 */
export type StreamEventName = 'workflow-event' | 'agent-event' | 'run' | 'runs';

/** One declared input of a workflow file, as its `input:` section gives it. */
export interface WorkflowInputInfo {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'array' | 'object';
  required: boolean;
  default?: unknown;
  description?: string;
}

/** A workflow file the launch page offers: its path relative to its root folder. */
export interface WorkflowFileInfo {
  path: string;
  root: string;
  name: string;
  description?: string;
  inputs: WorkflowInputInfo[];
}

/** `GET /ui/api/workflows`. */
export interface WorkflowList {
  roots: string[];
  workflows: WorkflowFileInfo[];
}

/** `POST /ui/api/runs` (202): the run started. */
export interface LaunchResult {
  runId: string;
}
