import type { EvalMetrics, LatencySummary } from './metrics.js';
import type { ModeComparison, ModeRun } from './compare.js';

export interface EvalReportOptions {
  /** First line of the report. @default 'Routing evaluation' */
  title?: string;
  /** Lines under the title that qualify every figure (e.g. what the model trained on). */
  notes?: readonly string[];
}

/** No report line is longer than this, so it fits a wide terminal without wrapping. */
export const REPORT_WIDTH = 120;

/** Above this many labels the matrix cannot fit the width; the report lists top confusions instead. */
const MAX_MATRIX_LABELS = 20;
const TOP_CONFUSIONS = 15;
/** Skill names in tables are cut to this so the numeric columns stay aligned. */
const SKILL_COLUMN_WIDTH = 40;

function percent(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

function milliseconds(value: number): string {
  // Sub-millisecond tiers (rules, cache) would all read 0.0 with one decimal.
  return value >= 100 ? value.toFixed(0) : value < 1 ? value.toFixed(2) : value.toFixed(1);
}

/** Cuts text to `width` characters, marking the cut with an ellipsis. */
function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(width - 1, 0))}…`;
}

/** Lays out rows as fixed-width columns: the first column left-aligned, the rest right-aligned. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function headline(metrics: EvalMetrics): string[] {
  const line = (label: string, value: string): string => `${label.padEnd(20)}${value}`;
  return [
    line(
      'Examples',
      `${metrics.count} (${metrics.inScopeCount} in scope, ${metrics.outOfScopeCount} out of scope)`,
    ),
    line(
      'Accuracy',
      `${percent(metrics.accuracy)} strict, ${percent(metrics.accuracyWithAlternates)} counting alternates`,
    ),
    line('In-scope accuracy', `${percent(metrics.inScopeAccuracy)}`),
    line('False-abstain rate', `${percent(metrics.falseAbstainRate)} of in-scope rows refused`),
    line('Out-of-scope recall', `${percent(metrics.outOfScopeRecall)} of none rows refused`),
    line('Abstain rate', `${percent(metrics.abstainRate)} of all rows refused`),
    line('Macro-F1', metrics.macroF1.toFixed(3)),
  ];
}

function perSkillTable(metrics: EvalMetrics): string[] {
  const rows = metrics.perSkill.map((skill) => [
    fit(skill.skill, SKILL_COLUMN_WIDTH),
    skill.precision.toFixed(3),
    skill.recall.toFixed(3),
    skill.f1.toFixed(3),
    String(skill.support),
    String(skill.predictedCount),
  ]);
  return table(['skill', 'precision', 'recall', 'f1', 'support', 'predicted'], rows);
}

/**
 * The matrix with numbered columns (names would not fit) and rows labelled `number name`.
 * Returns undefined when even that cannot fit the report width.
 */
function confusionMatrix(metrics: EvalMetrics): string[] | undefined {
  const { labels, counts } = metrics.confusion;
  if (labels.length === 0 || labels.length > MAX_MATRIX_LABELS) return undefined;
  const largest = Math.max(0, ...counts.flat());
  const cellWidth = Math.max(String(largest).length, String(labels.length).length) + 1;
  const numberWidth = String(labels.length).length;
  const available = REPORT_WIDTH - labels.length * cellWidth - numberWidth - 3;
  const longestLabel = Math.max(...labels.map((label) => label.length));
  const labelWidth = Math.min(longestLabel, available);
  // Below a few characters the row names are unreadable; the list form says more.
  if (labelWidth < 6) return undefined;
  const cell = (text: string): string => text.padStart(cellWidth);
  const prefix = (number: string, label: string): string =>
    `${number.padStart(numberWidth)} ${label.padEnd(labelWidth)} |`;
  const lines = [
    'rows: expected, columns: predicted (numbered as the rows); "." is 0',
    prefix('', '') + labels.map((_, position) => cell(String(position + 1))).join(''),
  ];
  labels.forEach((label, position) => {
    const row = counts[position] ?? [];
    lines.push(
      prefix(String(position + 1), fit(label, labelWidth)) +
        labels.map((_, column) => cell(row[column] ? String(row[column]) : '.')).join(''),
    );
  });
  return lines.map((line) => line.trimEnd());
}

function topConfusions(metrics: EvalMetrics): string[] {
  const { labels, counts } = metrics.confusion;
  const confusions: { expected: string; predicted: string; count: number }[] = [];
  counts.forEach((row, expectedIndex) =>
    row.forEach((count, predictedIndex) => {
      if (count > 0 && expectedIndex !== predictedIndex) {
        confusions.push({
          expected: labels[expectedIndex] ?? '',
          predicted: labels[predictedIndex] ?? '',
          count,
        });
      }
    }),
  );
  confusions.sort(
    (a, b) =>
      b.count - a.count || a.expected.localeCompare(b.expected) || a.predicted.localeCompare(b.predicted),
  );
  if (confusions.length === 0) return ['no confusions'];
  // Half the width each keeps the longest line within REPORT_WIDTH.
  const nameWidth = (REPORT_WIDTH - 20) / 2;
  return [
    `top ${Math.min(TOP_CONFUSIONS, confusions.length)} of ${confusions.length} confusions (expected → predicted):`,
    ...confusions
      .slice(0, TOP_CONFUSIONS)
      .map(
        (confusion) =>
          `  ${fit(confusion.expected, nameWidth)} → ${fit(confusion.predicted, nameWidth)}: ${confusion.count}`,
      ),
  ];
}

function calibration(metrics: EvalMetrics): string[] {
  const bins = metrics.calibration.bins.filter((bin) => bin.count > 0);
  return [
    `Calibration: ECE ${metrics.calibration.ece.toFixed(3)} over ${metrics.calibration.bins.length} ` +
      'equal-width confidence bins (0 = confidence matches accuracy)',
    ...table(
      ['confidence', 'count', 'mean confidence', 'accuracy'],
      bins.map((bin) => [
        `${bin.lower.toFixed(1)}–${bin.upper.toFixed(1)}`,
        String(bin.count),
        bin.meanConfidence.toFixed(3),
        percent(bin.accuracy),
      ]),
    ),
  ];
}

function latency(metrics: EvalMetrics): string[] {
  const row = (name: string, summary: LatencySummary): string[] => [
    fit(name, SKILL_COLUMN_WIDTH),
    String(summary.count),
    milliseconds(summary.p50),
    milliseconds(summary.p95),
    milliseconds(summary.p99),
    milliseconds(summary.max),
  ];
  const tiers = Object.entries(metrics.latency.byTier).map(([tier, summary]) => row(tier, summary));
  const methods = Object.entries(metrics.methodShare)
    .sort(([a, shareA], [b, shareB]) => shareB - shareA || a.localeCompare(b))
    .map(([method, share]) => `${method} ${percent(share)}`);
  return [
    ...table(
      ['tier (ms)', 'count', 'p50', 'p95', 'p99', 'max'],
      [row('total', metrics.latency.overall), ...tiers],
    ),
    ...wrap(`Decided by: ${methods.length === 0 ? 'nothing' : methods.join(', ')}`),
  ];
}

/** Breaks a long comma-separated line at commas so it stays within the report width. */
function wrap(text: string): string[] {
  const lines: string[] = [];
  let current = '';
  for (const part of text.split(', ')) {
    const next = current === '' ? part : `${current}, ${part}`;
    if (next.length > REPORT_WIDTH && current !== '') {
      lines.push(`${current},`);
      current = `  ${part}`;
    } else {
      current = next;
    }
  }
  lines.push(current);
  return lines.map((line) => fit(line, REPORT_WIDTH));
}

/**
 * Renders evaluation metrics as plain text for a terminal: headline figures, a per-skill table
 * (largest support first), the confusion matrix (or the top confusions when there are too many
 * labels), calibration and latency per tier. Every line is at most `REPORT_WIDTH` characters.
 */
export function formatEvalReport(metrics: EvalMetrics, options: EvalReportOptions = {}): string {
  const title = fit(options.title ?? 'Routing evaluation', REPORT_WIDTH);
  const sections: string[][] = [
    [title, '='.repeat(title.length), ...(options.notes ?? [])],
    headline(metrics),
    ['Per skill', ...perSkillTable(metrics)],
    ['Confusion', ...(confusionMatrix(metrics) ?? topConfusions(metrics))],
    calibration(metrics),
    ['Latency', ...latency(metrics)],
  ];
  return `${sections
    .map((section) => section.map((line) => fit(line, REPORT_WIDTH)).join('\n'))
    .join('\n\n')}\n`;
}

function money(value: number): string {
  return value === 0 ? '$0' : value < 0.01 ? `$${value.toFixed(5)}` : `$${value.toFixed(3)}`;
}

/** Lines of at most this many disagreements are listed in the terminal report. */
/**
 * One line for a run whose LLM calls failed (`hybrid: 20 of 20 LLM calls failed (anthropic AUTH ×20)`),
 * or undefined: its figures then measure the local tiers' fallback, not the LLM.
 */
export function describeProviderFailures(run: ModeRun): string | undefined {
  if (run.failedLlmCalls === 0) return undefined;
  const breakdown = run.providerFailures.map(
    (failure) => `${failure.provider} ${failure.code} ×${failure.count}`,
  );
  return `${run.mode}: ${run.failedLlmCalls} of ${run.llmCalls} LLM calls failed (${breakdown.join(', ')})`;
}

const LISTED_DISAGREEMENTS = 10;

/**
 * Renders a comparison of routing modes for a terminal: one row of headline figures per mode, the
 * agreement matrix, and the first disagreements (the markdown report lists them all).
 */
export function formatComparisonReport(comparison: ModeComparison, options: EvalReportOptions = {}): string {
  const title = fit(options.title ?? 'Routing modes compared', REPORT_WIDTH);
  const summary = table(
    [
      'mode',
      'accuracy',
      'macro-F1',
      'abstain',
      'LLM share',
      'p50 ms',
      'p95 ms',
      'overhead p95',
      '$/1k',
      'errors',
    ],
    comparison.modes.map((run) => [
      run.mode,
      percent(run.metrics.accuracyWithAlternates),
      run.metrics.macroF1.toFixed(3),
      percent(run.metrics.abstainRate),
      percent(run.llmShare),
      milliseconds(run.metrics.latency.overall.p50),
      milliseconds(run.metrics.latency.overall.p95),
      milliseconds(run.overhead.p95),
      money(run.costPer1k),
      String(run.errors),
    ]),
  );
  const tiers = comparison.modes.map(
    (run) =>
      `${run.mode}: ${Object.entries(run.metrics.methodShare)
        .sort(([a, shareA], [b, shareB]) => shareB - shareA || a.localeCompare(b))
        .map(([method, share]) => `${method} ${percent(share)}`)
        .join(', ')}`,
  );
  const { modes, rates } = comparison.agreement;
  const agreement = table(
    ['agreement', ...modes],
    modes.map((mode, row) => [mode, ...modes.map((_, column) => percent(rates[row]?.[column] ?? 0))]),
  );
  const listed = comparison.disagreements.slice(0, LISTED_DISAGREEMENTS).map((item) => {
    const answers = item.answers
      .map((answer) => `${answer.mode}=${answer.skill}${answer.correct ? '' : '✗'}`)
      .join(' ');
    return fit(`  #${item.index + 1} "${item.text}" expected ${item.expected}: ${answers}`, REPORT_WIDTH);
  });
  const warnings = comparison.modes.flatMap((run) =>
    run.warnings.map((warning) => `${run.mode}: ${warning}`),
  );
  const sections: string[][] = [
    [title, '='.repeat(title.length), `${comparison.count} examples`, ...(options.notes ?? [])],
    summary,
    ['Decided by', ...tiers.flatMap((line) => wrap(line))],
    agreement,
    [
      `Disagreements: ${comparison.disagreements.length}` +
        (comparison.disagreements.length > LISTED_DISAGREEMENTS ? ` (first ${LISTED_DISAGREEMENTS})` : ''),
      ...listed,
    ],
  ];
  const failures = comparison.modes.flatMap((run) => describeProviderFailures(run) ?? []);
  if (failures.length > 0) sections.push(['Provider failures', ...failures]);
  if (warnings.length > 0) sections.push(['Warnings', ...warnings]);
  return `${sections
    .map((section) => section.map((line) => fit(line, REPORT_WIDTH)).join('\n'))
    .join('\n\n')}\n`;
}
