import type { ModeComparison } from './compare.js';

export interface DisagreementReportOptions {
  title?: string;
  /** The dataset the comparison ran on, named in the header. */
  dataset?: string;
}

/** Makes text safe inside a markdown table cell: one line, pipes and markup escaped. */
function cell(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\\`*_[\]<>|#]/g, (character) => `\\${character}`);
}

function percent(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

/**
 * A markdown report of every request the modes answered differently, for a person to review: one
 * table row per request with the expected skill, each mode's answer (✓ when it counts as correct)
 * and an empty column for the reviewer's verdict. Rows where every mode was wrong come first: they
 * are the likeliest labelling mistakes or missing skills.
 */
export function formatDisagreementReport(
  comparison: ModeComparison,
  options: DisagreementReportOptions = {},
): string {
  const modes = comparison.modes.map((run) => run.mode);
  const lines = [
    `# ${options.title ?? 'Routing disagreements'}`,
    '',
    `${comparison.disagreements.length} of ${comparison.count} requests were routed differently by ` +
      `${modes.join(', ')}` +
      (options.dataset === undefined ? '.' : ` on \`${options.dataset}\`.`),
    '',
    '| mode | accuracy | macro-F1 | abstain | LLM share |',
    '|---|---|---|---|---|',
    ...comparison.modes.map(
      (run) =>
        `| ${run.mode} | ${percent(run.metrics.accuracyWithAlternates)} | ${run.metrics.macroF1.toFixed(3)} | ` +
        `${percent(run.metrics.abstainRate)} | ${percent(run.llmShare)} |`,
    ),
    '',
  ];
  if (comparison.disagreements.length === 0) {
    lines.push('No disagreements.');
    return `${lines.join('\n')}\n`;
  }
  const ordered = [...comparison.disagreements].sort((a, b) => {
    const wrongA = a.answers.every((answer) => !answer.correct) ? 0 : 1;
    const wrongB = b.answers.every((answer) => !answer.correct) ? 0 : 1;
    return wrongA - wrongB || a.index - b.index;
  });
  lines.push(
    'Answers marked ✓ count as correct for the dataset; the confidence and the deciding tier follow ' +
      'each answer. Fill in the verdict column (the right skill, or "relabel"), then correct the dataset ' +
      "or add the request to the right skill's examples.",
    '',
    `| # | request | expected | ${modes.join(' | ')} | verdict |`,
    `|---|---|---|${modes.map(() => '---|').join('')}---|`,
  );
  for (const item of ordered) {
    const expected = [item.expected, ...(item.alternates ?? [])].map(cell).join(' / ');
    const answers = item.answers.map(
      (answer) =>
        `${answer.correct ? '✓ ' : ''}${cell(answer.skill)} (${answer.confidence.toFixed(2)}, ${answer.method})`,
    );
    lines.push(`| ${item.index + 1} | ${cell(item.text)} | ${expected} | ${answers.join(' | ')} |  |`);
  }
  return `${lines.join('\n')}\n`;
}
