import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { redactSecrets } from '../core/secrets.js';

/** What a tool handler gets from the SDK besides its arguments. */
export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Reports one step of a long operation: a short line of what is happening. */
export type ProgressReporter = (message: string) => void;

/**
 * MCP progress notifications for the request `extra` belongs to, when its client sent a progressToken
 * (otherwise reports go nowhere). `progress` counts reports, so it only ever grows, as the protocol
 * wants; the total is unknown. Nothing is sent once the tool call has answered.
 */
export function progressReporter(extra: ToolExtra): { report: ProgressReporter; stop: () => void } {
  const token = extra._meta?.progressToken;
  let count = 0;
  let open = token !== undefined;
  const report: ProgressReporter = (message) => {
    if (!open || token === undefined) return;
    count += 1;
    extra
      .sendNotification({
        method: 'notifications/progress',
        // An agent's message may quote what it read; no key leaves through progress either.
        params: { progressToken: token, progress: count, message: redactSecrets(message) },
      })
      // A client gone meanwhile is not the operation's problem.
      .catch(() => undefined);
  };
  return {
    report,
    stop: () => {
      open = false;
    },
  };
}
