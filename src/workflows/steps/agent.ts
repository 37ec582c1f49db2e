import { SwitchboardError } from '../../core/errors.js';
import type { StepExecutor } from '../step-executor.js';
import type { GitAgentStepOptions } from './git-agent.js';
import { executeLlmStep } from './llm.js';
import { executeValidatedLlmStep } from './validator.js';

/**
 * Conductor's `type: agent` (the default type). Without `effects: git` it is one LLM call
 * (`llm.ts`), graded and perhaps made again when it has a `validator:` (`validator.ts`); with it, a
 * Claude Code agent in a git worktree whose result is one commit (`git-agent.ts`, loaded only then).
 * `options` say how Claude Code is reached (the `claude.*` settings); without them, Claude Code's own
 * environment decides.
 */
export function createAgentStepExecutor(options: GitAgentStepOptions = {}): StepExecutor {
  return async (context) => {
    const { step } = context;
    if (step.type !== 'agent') {
      throw new SwitchboardError(
        'INTERNAL',
        `step "${step.name}" of type ${step.type} reached the agent executor`,
      );
    }
    if (step.git !== undefined) {
      const { executeGitAgentStep } = await import('./git-agent.js');
      return executeGitAgentStep(context, step, step.git, options);
    }
    if (step.validator !== undefined) return executeValidatedLlmStep(context, step, step.validator);
    return executeLlmStep(context, step);
  };
}

/** `type: agent` with Claude Code reached through its environment (`ANTHROPIC_BASE_URL`, `SWITCHBOARD_CLAUDE_PATH`, …). */
export const executeAgentStep: StepExecutor = createAgentStepExecutor();
