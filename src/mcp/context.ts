import type { SwitchboardConfig } from '../core/config.js';
import type { Router } from '../route/router.js';
import type { CallService } from '../serve/call-handler.js';
import type { BackgroundRuns } from './background-runs.js';
import type { CommandPolicy } from './command-policy.js';

/** What every tool works with; one per server process, shared by all its MCP sessions. */
export interface McpContext {
  config: SwitchboardConfig;
  /** Absent when the server was started without skills: `route` answers with an error. */
  router: Router | undefined;
  /** Calls go through the same registry, ledger and caps as serve's `POST /call`. */
  calls: CallService;
  /** Agent runs, workflow runs and calls that outlive the tool call that started them. */
  runs: BackgroundRuns;
  /** Aborted when the server stops: work still running stops cleanly (and stays resumable). */
  abortSignal: AbortSignal;
  /**
   * What command-running tools may do: set by `serve` for callers over HTTP; absent on stdio, whose
   * client the user started themselves (as they would run the CLI).
   */
  commands?: CommandPolicy;
}
