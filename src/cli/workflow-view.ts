import type {
  PendingGate,
  StepView,
  WorkflowEventRecord,
  WorkflowRunResult,
} from '../workflows/api-types.js';

/**
 * How `switchboard workflow` shows a run: a view redrawn in place on a terminal while it runs, one
 * line per event otherwise, and the text of `status`, `ls` and `logs`. Pure formatting over the
 * library's results and events; the commands live in workflow.ts.
 */

/** Seconds with one decimal under a minute, then `2m05s`. */
export function elapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${Math.floor(ms / 60_000)}m${String(seconds).padStart(2, '0')}s`;
}

export function dollars(usd: number): string {
  return `$${usd.toFixed(4)}`;
}

/** A word safe to paste into a POSIX shell: plain words as they are, anything else single-quoted. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The command that answers `gate` with `value` (with `--text` when the option asks for text). */
export function gateCommand(runId: string, gate: PendingGate, value: string): string {
  const option = gate.options.find((candidate) => candidate.value === value);
  const text = option?.promptFor === undefined ? '' : ` --text "…"`;
  return `switchboard workflow gate ${shellWord(runId)} ${shellWord(gate.step)} --choose ${shellWord(value)}${text}`;
}

/**
 * What an event means for the live view. The engine names its events noun-verb (`step-start`,
 * `step-end` with `data.status`, `run-waiting`, `group-start`, …); the view reads the status when the
 * event carries one and the verb otherwise, so a new event type shows up as activity, not as an error.
 */
type StepState = 'running' | 'done' | 'failed' | 'waiting';

const STATUS_STATES: Record<string, StepState> = {
  running: 'running',
  completed: 'done',
  failed: 'failed',
  interrupted: 'failed',
  waiting: 'waiting',
};

function stateOf(event: WorkflowEventRecord): StepState | undefined {
  if (event.step === undefined) return undefined;
  const status = event.data?.['status'];
  if (typeof status === 'string' && STATUS_STATES[status] !== undefined) return STATUS_STATES[status];
  const type = event.type.toLowerCase();
  if (/fail|error|interrupt/.test(type)) return 'failed';
  if (/wait|park/.test(type)) return 'waiting';
  if (/end|complete|done|finish|adopt|skip|replay/.test(type)) return 'done';
  if (/start|begin|resume|attempt|retry/.test(type)) return 'running';
  return undefined;
}

function costOf(event: WorkflowEventRecord): number {
  const cost = event.data?.['costUsd'];
  return typeof cost === 'number' && Number.isFinite(cost) ? cost : 0;
}

/**
 * The run's cost so far as events arrive. A step's `step-end` carries its whole cost, which already
 * includes what its progress events (an agent step's `agent-attempt`) reported on the way: those count
 * only until their step ends, or a git step's agent would be paid for twice.
 */
function costTally(): (event: WorkflowEventRecord) => number {
  const open = new Map<string, number>();
  let ended = 0;
  return (event) => {
    const cost = costOf(event);
    const key = event.key ?? event.step ?? '';
    if (event.type === 'step-end') {
      open.delete(key);
      ended += cost;
    } else if (cost !== 0) {
      open.set(key, (open.get(key) ?? 0) + cost);
    }
    let total = ended;
    for (const spent of open.values()) total += spent;
    return total;
  };
}

/** An event's plain data fields as `name=value` (nested values left out; events hold no prompt text). */
function eventDetails(event: WorkflowEventRecord): string {
  return Object.entries(event.data ?? {})
    .filter(([, value]) => value !== undefined && value !== null && typeof value !== 'object')
    .map(([name, value]) => `${name}=${typeof value === 'string' ? JSON.stringify(value) : String(value)}`)
    .join(' ')
    .slice(0, 200);
}

/** `logs`: time, sequence number, type, the step's execution key, its data. */
export function eventLine(event: WorkflowEventRecord): string {
  const parts = [event.at, String(event.seq).padStart(4), event.type.padEnd(16)];
  const where = event.key ?? event.step;
  if (where !== undefined) parts.push(where);
  const details = eventDetails(event);
  if (details !== '') parts.push(details);
  return parts.join(' ');
}

export interface RunView {
  /** Hears every event of the run (the engine's `onEvent`). */
  onEvent(event: WorkflowEventRecord): void;
  /** Ends the view; a terminal's drawn lines are erased, so the summary follows on a clean screen. */
  stop(): void;
}

const SILENT: RunView = { onEvent() {}, stop() {} };

/**
 * The view for `run`, `resume` and a continuing `gate`: a redrawn block on a terminal, plain lines on a
 * pipe, nothing with `--quiet`. `steps` (the workflow's step and group names, when known) lets it count
 * the pending ones.
 */
export function createRunView({
  quiet,
  tty = process.stderr.isTTY === true,
  steps = [],
}: {
  quiet: boolean;
  tty?: boolean;
  steps?: readonly string[];
}): RunView {
  if (quiet) return SILENT;
  return tty ? liveView(steps) : lineView();
}

/** One line per event on stderr, prefixed with the run's clock and cost so far. */
function lineView(): RunView {
  const started = Date.now();
  const tally = costTally();
  return {
    onEvent(event) {
      const cost = tally(event);
      const where = event.key ?? event.step;
      const details = eventDetails(event);
      const parts = [`[${event.runId}]`, elapsed(Date.now() - started), dollars(cost), event.type];
      if (where !== undefined) parts.push(where);
      if (details !== '') parts.push(details);
      process.stderr.write(`${parts.join(' ')}\n`);
    },
    stop() {},
  };
}

/**
 * A block of three lines redrawn every 250 ms on stderr: the run and its clock and cost, the counts
 * of steps done/running/pending, and the current step with the latest event. It never hides the cursor
 * or turns off wrapping (a Ctrl-C would leave the terminal so); lines are cut to the terminal's width.
 */
function liveView(declared: readonly string[]): RunView {
  const started = Date.now();
  const states = new Map<string, StepState>();
  let runId = '';
  let current = '';
  let latest = 'starting';
  const tally = costTally();
  let cost = 0;
  let drawn = 0;
  // A pseudo-terminal may report no width (0); such a one gets a generous default rather than none.
  const width = (): number => {
    const columns = process.stderr.columns ?? 0;
    return columns > 20 ? columns - 1 : 160;
  };
  const erase = (): void => {
    if (drawn > 0) process.stderr.write(`\x1b[${drawn}A\x1b[0J`);
    drawn = 0;
  };
  const draw = (): void => {
    const count = (state: StepState): number =>
      [...states.values()].filter((value) => value === state).length;
    const pending = declared.filter((name) => !states.has(name)).length;
    const lines = [
      `workflow ${runId} · ${elapsed(Date.now() - started)} · ${dollars(cost)}`,
      `  steps: ${count('done')} done · ${count('running')} running · ${declared.length === 0 ? '?' : pending} pending${count('failed') > 0 ? ` · ${count('failed')} failed` : ''}${count('waiting') > 0 ? ` · ${count('waiting')} waiting` : ''}`,
      `  ▸ ${current === '' ? '—' : current}: ${latest}`,
    ].map((line) => line.slice(0, width()));
    erase();
    process.stderr.write(`${lines.join('\n')}\n`);
    drawn = lines.length;
  };
  const timer = setInterval(draw, 250);
  // The run itself keeps the process alive; the redraw must not.
  timer.unref();
  return {
    onEvent(event) {
      runId = event.runId;
      cost = tally(event);
      const state = stateOf(event);
      if (event.step !== undefined && state !== undefined) {
        states.set(event.step, state);
        if (state === 'running' || state === 'waiting')
          current = shortKey(event.runId, event.key ?? event.step);
      }
      latest = event.type;
    },
    stop() {
      clearInterval(timer);
      erase();
    },
  };
}

/** `status`: the run, its current step, the step table, the pending gate and the output. */
export function statusText(result: WorkflowRunResult): string {
  // A running run whose step shows as interrupted has no live process: its owner died.
  const orphaned = result.status === 'running' && result.steps.some((step) => step.status === 'interrupted');
  const state = orphaned
    ? `running, but no process advances it: switchboard workflow resume ${result.id}`
    : result.status;
  const lines = [`run       ${result.id} (${state})`, `workflow  ${result.workflow}`];
  if (result.step !== undefined) lines.push(`step      ${result.step}`);
  lines.push(`cost      ${dollars(result.costUsd)}`);
  if (result.error !== undefined || result.errorCode !== undefined)
    lines.push(`error     ${result.errorCode ?? 'WORKFLOW_FAILED'}: ${result.error ?? ''}`);
  for (const warning of result.warnings ?? []) lines.push(`warning   ${warning}`);
  lines.push('', ...stepTable(result.id, result.steps));
  if (result.gate !== undefined) lines.push('', ...gateText(result.id, result.gate));
  if (result.output !== undefined && Object.keys(result.output).length > 0 && result.status === 'completed')
    lines.push(
      '',
      'output',
      ...JSON.stringify(result.output, null, 2)
        .split('\n')
        .map((line) => `  ${line}`),
    );
  return `${lines.join('\n')}\n`;
}

/** A step's execution key without the run id in front (`review/2`, `implement/0/3`). */
function shortKey(runId: string, key: string): string {
  return key.startsWith(`${runId}/`) ? key.slice(runId.length + 1) : key;
}

export function stepTable(runId: string, steps: readonly StepView[]): string[] {
  if (steps.length === 0) return ['no step has run yet'];
  const errors = steps.some((step) => step.error !== undefined);
  const rows = steps.map((step) => [
    shortKey(runId, step.key),
    step.type,
    step.status,
    String(step.attempts),
    step.durationMs === undefined ? '—' : elapsed(step.durationMs),
    dollars(step.costUsd),
    ...(errors ? [step.error ?? ''] : []),
  ]);
  const header = ['STEP', 'TYPE', 'STATUS', 'ATTEMPTS', 'DURATION', 'COST', ...(errors ? ['ERROR'] : [])];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const format = (row: string[]): string =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map(format)];
}

export function gateText(runId: string, gate: PendingGate): string[] {
  const lines = [`gate      ${gate.step}: ${gate.prompt.trim().split('\n')[0] ?? ''}`];
  for (const option of gate.options) {
    const asks = option.promptFor === undefined ? '' : ` (asks for ${option.promptFor}: --text "…")`;
    lines.push(`  ${option.value.padEnd(12)} ${option.label}${asks}`);
  }
  for (const question of gate.questions ?? []) {
    const notes = [
      question.required ? 'required' : undefined,
      question.choices.length === 0 ? undefined : `choices: ${question.choices.join(' | ')}`,
      question.default === undefined ? undefined : `default: ${question.default}`,
    ].filter((note) => note !== undefined);
    lines.push(
      `  ${question.id.padEnd(12)} ${question.text.trim().split('\n')[0] ?? ''}${notes.length === 0 ? '' : ` (${notes.join('; ')})`}`,
    );
  }
  if (gate.questions !== undefined) lines.push(`answer    ${questionsCommand(runId, gate)}`);
  const first = gate.options[0];
  if (first !== undefined) lines.push(`answer    ${gateCommand(runId, gate, first.value)}`);
  return lines;
}

/** The command that answers a questions step: one `--answer` per question (the ones it shows). */
export function questionsCommand(runId: string, gate: PendingGate): string {
  const answers = (gate.questions ?? [])
    .map((question) => ` --answer ${shellWord(question.id)}="…"`)
    .join('');
  return `switchboard workflow gate ${shellWord(runId)} ${shellWord(gate.step)}${answers}`;
}

/** `ls`: one line per run. */
export function runLine(run: WorkflowRunResult): string {
  return `${run.id.padEnd(28)} ${run.status.padEnd(10)} ${dollars(run.costUsd).padStart(9)}  ${run.workflow}${run.step === undefined ? '' : ` @ ${run.step}`}`;
}
