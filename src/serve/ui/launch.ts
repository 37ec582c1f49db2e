import { readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { isPlainObject } from '../../core/plain-object.js';
import type { McpContext } from '../../mcp/context.js';
import type { WorkflowEventRecord } from '../../workflows/api-types.js';
import { parseJsonObject, readBody } from '../http.js';
import type { LaunchResult, WorkflowFileInfo, WorkflowList } from './api-types.js';

// Starting a workflow run from the dashboard: the workflow files under the server's folders (its
// --repo-root folders, else the one it started in), and a run of one of them. A run starts through the
// choke points of MCP's `workflow_run` (checkCallerFile, the command policy's checkWorkflow, the same
// engine options), with inputs read by the CLI's `resolveInputs`, and only from a file the list offers.

const MAX_DEPTH = 3;
const MAX_FILES = 200;
const SKIPPED = new Set(['node_modules', '.git', '.switchboard']);

/** The folders the list walks: the real paths of --repo-root, else of the folder the server started in. */
export function launchRoots(context: McpContext): string[] {
  const roots = context.commands?.repoRoots ?? [];
  return roots.length > 0 ? [...roots] : [realpathSync(process.cwd())];
}

interface Found {
  root: string;
  /** The file's real path. */
  real: string;
  info: WorkflowFileInfo;
}

/** The YAML files under the roots (depth ≤ 3, ≤ 200 files, no dot folders) that parse as workflows. */
async function findWorkflows(context: McpContext): Promise<Found[]> {
  const [{ loadWorkflow }, { checkCallerFile }] = await Promise.all([
    import('../../workflows/format/index.js'),
    import('../../mcp/command-policy.js'),
  ]);
  const found: Found[] = [];
  let seen = 0;
  const walk = (root: string, folder: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
    } catch {
      return;
    }
    for (const entry of entries) {
      if (seen >= MAX_FILES) return;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (depth < MAX_DEPTH && !entry.name.startsWith('.') && !SKIPPED.has(entry.name))
          walk(root, path, depth + 1);
        continue;
      }
      if (!entry.isFile() || !/\.ya?ml$/i.test(entry.name)) continue;
      seen += 1;
      try {
        checkCallerFile(context.commands ?? { allowCommands: false, repoRoots: [] }, path, 'workflow file');
        const workflow = loadWorkflow(path);
        const info: WorkflowFileInfo = {
          path: relative(root, path).split(sep).join('/'),
          root,
          name: workflow.name,
          inputs: Object.entries(workflow.input).map(([name, input]) => ({
            name,
            type: input.type,
            required: input.required,
            ...(input.default === undefined ? {} : { default: input.default }),
            ...(input.description === undefined ? {} : { description: input.description }),
          })),
        };
        if (workflow.description !== undefined) info.description = workflow.description;
        found.push({ root, real: realpathSync(path), info });
      } catch {
        // Not a workflow (another YAML file), or one the file policy refuses: not offered.
      }
    }
  };
  for (const root of launchRoots(context)) walk(root, root, 1);
  return found;
}

export async function listWorkflows(context: McpContext): Promise<WorkflowList> {
  return { roots: launchRoots(context), workflows: (await findWorkflows(context)).map(({ info }) => info) };
}

/** `POST /ui/api/runs`: starts a run of an offered workflow file; answers once it is recorded. */
export async function launchRun(
  request: IncomingMessage,
  context: McpContext,
): Promise<{ status: number; body: LaunchResult }> {
  const text = await readBody(request);
  if (text === undefined) throw new SwitchboardError('INVALID_INPUT', 'the body is too large');
  const { file, inputs = {} } = parseJsonObject(text, '{"file": "flow.yaml", "inputs": {}}');
  if (typeof file !== 'string' || file === '') {
    throw new SwitchboardError('INVALID_INPUT', '"file" must be a workflow file\'s path', {
      hint: 'send a path GET /ui/api/workflows lists',
    });
  }
  if (!isPlainObject(inputs)) throw new SwitchboardError('INVALID_INPUT', '"inputs" must be an object');
  const [{ checkCallerFile, checkWorkflow }, { loadWorkflow }, { resolveInputs }] = await Promise.all([
    import('../../mcp/command-policy.js'),
    import('../../workflows/format/index.js'),
    import('../../workflows/inputs.js'),
  ]);
  const roots = launchRoots(context);
  const written = isAbsolute(file) ? file : resolve(roots[0] as string, file);
  checkCallerFile(context.commands, written, 'workflow file');
  const real = offered(await findWorkflows(context), file);
  const workflow = loadWorkflow(real);
  checkWorkflow(context.commands, workflow);
  try {
    resolveInputs(workflow, inputs);
  } catch (error) {
    // The CLI's rule and words; over HTTP a bad input is the caller's request, a 400.
    if (isSwitchboardError(error) && error.code === 'WORKFLOW_INVALID') {
      throw new SwitchboardError('INVALID_INPUT', error.message, {
        ...(error.hint === undefined ? {} : { hint: error.hint }),
      });
    }
    throw error;
  }
  const [{ newRunId }, { runWorkflow }, { serverEngineOptions, engineChoices }] = await Promise.all([
    import('../../workflows/engine-start.js'),
    import('../../workflows/index.js'),
    import('../../mcp/workflow-tools.js'),
  ]);
  const runId = newRunId();
  let started: (id: string) => void = () => undefined;
  const recorded = new Promise<string>((resolve) => (started = resolve));
  const work = context.runs.track(
    `workflow:${runId}`,
    runWorkflow({
      ...serverEngineOptions(context),
      ...engineChoices(context, {}),
      onEvent: (event: WorkflowEventRecord) => started(event.runId),
      file: real,
      inputs,
      runId,
    }),
  );
  // A failure before the run is recorded is this request's error; after it, the run's own record.
  const id = await Promise.race([recorded, work.then((result) => result.id)]);
  work.catch(() => undefined);
  return { status: 202, body: { runId: id } };
}

/** The real path of the listed file `file` names (relative to a root, or absolute); else 403. */
function offered(found: Found[], file: string): string {
  for (const { root, real } of found) {
    const candidate = isAbsolute(file) ? file : resolve(root, file);
    let path: string;
    try {
      path = realpathSync(candidate);
    } catch {
      continue;
    }
    if (path === real) return real;
  }
  throw new SwitchboardError(
    'FORBIDDEN',
    `${JSON.stringify(file.slice(0, 200))} is not a workflow file this dashboard offers`,
    { hint: 'pick one of the files GET /ui/api/workflows lists (under the folders this server works in)' },
  );
}
