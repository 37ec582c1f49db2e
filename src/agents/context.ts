import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import type { AgentTask } from './task.js';

/** Files the runner writes into the worktree for the agent; never committed. */
export const CONTEXT_JSON_FILE = '.agent-context.json';
export const CONTEXT_MARKDOWN_FILE = 'EXECUTION_CONTEXT.md';
export const CONTEXT_FILES: readonly string[] = [CONTEXT_JSON_FILE, CONTEXT_MARKDOWN_FILE];

/**
 * The default EXECUTION_CONTEXT.md. `{{name}}` placeholders are replaced; unknown ones are left as
 * they are, so a typo shows in the file instead of vanishing.
 */
export const DEFAULT_CONTEXT_TEMPLATE = `# Task {{id}}: {{title}}

{{description}}

## Acceptance criteria

{{acceptance}}

## How the change is checked

{{verify}}

## Where you are

- Working directory: \`{{worktree}}\` (a git worktree on branch \`{{branch}}\`, made from \`{{base}}\`)
- Attempt {{attempt}} of {{maxAttempts}}
- Work only inside this directory. Do not commit: the runner commits and merges your change.

{{feedback}}
`;

/** What the agent is told about its task; also written as `.agent-context.json`. */
export interface AgentContext {
  runId: string;
  task: AgentTask;
  worktree: string;
  branch: string;
  baseBranch: string;
  baseCommit: string;
  attempt: number;
  /** What went wrong in the previous attempt, when there was one. */
  feedback?: string;
}

export function renderContext(template: string, context: AgentContext): string {
  const { task } = context;
  const values: Record<string, string> = {
    id: task.id,
    title: task.title,
    description: task.description.trim() === '' ? '(no description)' : task.description.trim(),
    acceptance:
      task.acceptance.length === 0
        ? '(none given: make the change the title and description ask for)'
        : task.acceptance.map((line) => `- ${line}`).join('\n'),
    verify:
      task.verify === undefined
        ? 'No verify command; the change must not be empty.'
        : `The runner runs \`${task.verify}\` in this directory; it must exit with status 0.`,
    worktree: context.worktree,
    branch: context.branch,
    base: context.baseBranch,
    baseCommit: context.baseCommit,
    runId: context.runId,
    attempt: String(context.attempt),
    maxAttempts: String(task.limits.maxAttempts),
    feedback:
      context.feedback === undefined
        ? ''
        : `## The previous attempt failed\n\n\`\`\`\n${context.feedback}\n\`\`\`\n`,
  };
  return template.replace(/\{\{\s*([A-Za-z]+)\s*\}\}/g, (whole, name: string) => values[name] ?? whole);
}

/** Reads a user's EXECUTION_CONTEXT.md template. */
export function loadContextTemplate(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new SwitchboardError('INVALID_INPUT', `context template ${file} cannot be read`, {
      hint: 'check the --context-template path',
      cause: error,
    });
  }
}

/** Writes both context files into the worktree. */
export function writeContextFiles(context: AgentContext, template = DEFAULT_CONTEXT_TEMPLATE): void {
  const json = {
    runId: context.runId,
    attempt: context.attempt,
    worktree: context.worktree,
    branch: context.branch,
    base: { branch: context.baseBranch, commit: context.baseCommit },
    task: context.task,
    ...(context.feedback === undefined ? {} : { previousFailure: context.feedback }),
  };
  writeFileSync(join(context.worktree, CONTEXT_JSON_FILE), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(context.worktree, CONTEXT_MARKDOWN_FILE), renderContext(template, context));
}

/** The prompt of an attempt: the task, and on a retry what went wrong before. */
export function attemptPrompt(context: AgentContext, resumed: boolean): string {
  const { task } = context;
  if (context.feedback !== undefined) {
    return [
      resumed ? 'Your previous attempt at this task failed.' : `Task ${task.id}: ${task.title}`,
      resumed ? '' : `Read ${CONTEXT_MARKDOWN_FILE} for the task. A previous attempt failed.`,
      'What went wrong:',
      '```',
      context.feedback,
      '```',
      'Fix the problem in the working directory. Do not commit.',
    ]
      .filter((line) => line !== '')
      .join('\n');
  }
  const lines = [`Task ${task.id}: ${task.title}`, ''];
  if (task.description.trim() !== '') lines.push(task.description.trim(), '');
  if (task.acceptance.length > 0)
    lines.push('Acceptance criteria:', ...task.acceptance.map((a) => `- ${a}`), '');
  lines.push(
    `The full context is in ${CONTEXT_MARKDOWN_FILE} in the working directory. Make the change there and do not commit.`,
  );
  return lines.join('\n');
}
