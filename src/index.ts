/** Switchboard's public library API. The CLI (`switchboard`) is a thin layer over these. */
export { createRouter, type Router, type RouterOptions } from './route/router.js';
export {
  loadSkills,
  type LoadSkillsOptions,
  type LoadSkillsResult,
  type SkillProblem,
} from './route/skills.js';
export { loadDataset, type LoadDatasetOptions } from './route/datasets.js';
export {
  evaluateRouter,
  fitRouter,
  rankExamples,
  type FitReport,
  type FitRouterOptions,
} from './route/evaluate.js';
export { computeMetrics, type EvalMetrics, type ScoredRow } from './route/metrics.js';
export {
  applyThresholds,
  fitThresholds,
  type FitObjective,
  type FitResult,
  type SkillThresholds,
  type ThresholdSettings,
  type Thresholds,
} from './route/fit.js';
export {
  fitSkillThresholds,
  MIN_SKILL_ROWS,
  MIN_SKILL_WRONG_ROWS,
  MIN_TUNING_ROWS,
  tuningSetWarnings,
  type SkillFitOptions,
  type SkillFitOutcome,
  type SkillFitResult,
} from './route/fit-skills.js';
export { formatEvalReport } from './route/eval-report.js';
export type { RouteRule } from './route/tiers/rules-tier.js';
export type { RouteTier, TierInput, TierVerdict } from './route/tier.js';
export {
  DEFAULT_WORKER_SETTINGS,
  loadConfig,
  type LoadConfigOptions,
  type SwitchboardConfig,
  type WorkerSettings,
} from './core/config.js';
export {
  EXIT_CODES,
  ERROR_CODES,
  exitCodeFor,
  isSwitchboardError,
  SwitchboardError,
  type ErrorCode,
} from './core/errors.js';
export { redactSecrets, registerSecret } from './core/secrets.js';
export { flushTracing, tracingEnabled } from './observe/tracing.js';
export {
  NONE,
  ROUTE_MODES,
  type LabelledExample,
  type RouteCandidate,
  type RouteDecision,
  type RouteMethod,
  type RouteMode,
  type Skill,
} from './core/route-types.js';
export { connectLedger, openLedger, type Ledger } from './store/ledger.js';
export { copyLedger, type CopyLedgerOptions, type CopyLedgerResult } from './store/copy.js';
export type { KeyUsage, VirtualKeyRecord } from './store/ledger.js';
export {
  generateVirtualKey,
  hashVirtualKey,
  KEY_SECRET_VARIABLE,
  loadKeySecret,
  virtualKeyPrefix,
  type LoadKeySecretOptions,
} from './keys/key-secret.js';
export { modelScope, type ModelScope, type ScopeTarget } from './keys/model-scope.js';
export {
  KEY_TAG,
  KeyDirectory,
  keyBudgetRules,
  keyTags,
  readPresentedKey,
  type KeyAuthentication,
  type KeyDirectoryOptions,
  type KeyRefusal,
  type RequestHeaders,
  type VirtualKey,
  type VirtualKeyLimits,
} from './keys/virtual-keys.js';
export {
  KeyLimits,
  RATE_WINDOW_MS,
  type KeyAdmission,
  type KeyAdmitted,
  type KeyLimitName,
  type KeyLimitsOptions,
  type KeyRefused,
} from './keys/key-limits.js';
export {
  issueVirtualKey,
  listedVirtualKey,
  type IssueVirtualKeyOptions,
  type ListedVirtualKey,
} from './keys/key-admin.js';
export {
  fallbackReason,
  metricsFromLedger,
  RouteMetrics,
  ROUTE_DURATION_BUCKETS,
  type MetricsFromLedgerOptions,
  type ObservedDecision,
  type RouteMetricsOptions,
} from './observe/prometheus.js';
export {
  createClaudeCodeProvider,
  type ClaudeCallOptions,
  type ClaudeCodeProvider,
  type ClaudeCodeProviderOptions,
} from './providers/claude-code/claude-code-provider.js';
export { ProviderRegistry } from './providers/registry.js';
export { call } from './lazy-api.js';
export type { CallOptions } from './invoke/call.js';
export {
  parseProviderSpec,
  type CallAttempt,
  type CallMessage,
  type CallRequest,
  type CallResult,
  type JsonSchema,
  type Provider,
  type TokenUsage,
  type ToolCall,
  type ToolDefinition,
  type ToolResult,
} from './core/call-types.js';
export { startSimulator } from './lazy-api.js';
export type { SimLogEntry, Simulator, SimulatorOptions } from './sim/server.js';
export type { Scenario } from './sim/scenario.js';
export {
  compareModes,
  type CompareOptions,
  type ComparedRow,
  type Disagreement,
  type ModeComparison,
  type ModeRun,
} from './route/compare.js';
export { fitForLlmShare, type LlmShareFit } from './route/evaluate.js';
export { formatDisagreementReport } from './route/disagreement-report.js';
export { renderHtmlReport } from './observe/html-report.js';
export * from './agents/index.js';
export { runAgent } from './lazy-api.js';
export * from './workers/index.js';
export { killAgentProcesses } from './agents/processes.js';
export type { AgentInvocation, AgentOutcome, AgentStatus } from './agents/claude-agent.js';
export {
  answerGate,
  cancelWorkflowRun,
  guideWorkflowRun,
  listWorkflowGuidance,
  listWorkflowRuns,
  readWorkflowEvents,
  resumeWorkflow,
  runWorkflow,
  workflowStatus,
  type AnswerGateOptions,
  type GuideWorkflowOptions,
  type PendingGate,
  type ResumeWorkflowOptions,
  type RunWorkflowOptions,
  type StepView,
  type WorkflowDefinition,
  type WorkflowEngineOptions,
  type WorkflowEventRecord,
  type WorkflowGuidance,
  type WorkflowLimitOverrides,
  type WorkflowRunResult,
  type WorkflowStatus,
} from './workflows/index.js';
export type {
  GateAnswer,
  StepContext,
  StepExecutor,
  StepOutcome,
  TemplateScope,
  WorkflowEvent,
} from './workflows/step-executor.js';
