import { isCorrect } from './metrics.js';
import type { ComparedRow, ModeComparison } from './compare.js';

/** A dataset row the router answered wrongly (alternates count as right). */
export interface WrongRow {
  /** 1-based line of the example in the dataset's order. */
  row: number;
  text: string;
  expected: string;
  alternates?: readonly string[];
  predicted: string;
  confidence: number;
  method: string;
  /** Set when routing failed on this row instead of answering. */
  error?: string;
}

/** The rows of one run the router got wrong, in dataset order. */
export function wrongRows(rows: readonly ComparedRow[]): WrongRow[] {
  return rows.flatMap((row, index) =>
    isCorrect(row)
      ? []
      : [
          {
            row: index + 1,
            text: row.text ?? '',
            expected: row.expected,
            ...(row.alternates === undefined ? {} : { alternates: row.alternates }),
            predicted: row.predicted,
            confidence: row.confidence,
            method: row.method,
            ...(row.error === undefined ? {} : { error: row.error }),
          },
        ],
  );
}

/** Makes text safe inside a markdown table cell: one line, pipes and markup escaped. */
function cell(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\\`*_[\]<>|#]/g, (character) => `\\${character}`);
}

/**
 * A markdown list of the wrong rows for a person to review: the request, what was expected, what the
 * router said and how sure it was, and an empty column for the verdict (a labelling mistake, a missing
 * example, a skill to split).
 */
export function formatWrongRowsReport(
  wrong: readonly WrongRow[],
  { dataset, count }: { dataset: string; count: number },
): string {
  const lines = [
    '# Misrouted rows',
    '',
    `${wrong.length} of ${count} rows of \`${dataset}\` were routed wrongly.`,
    '',
    '| row | request | expected | predicted | confidence | tier | verdict |',
    '|---|---|---|---|---|---|---|',
    ...wrong.map((item) =>
      [
        '',
        String(item.row),
        cell(item.text),
        cell([item.expected, ...(item.alternates ?? [])].join(' or ')),
        cell(item.predicted),
        item.confidence.toFixed(2),
        cell(item.error === undefined ? item.method : `error: ${item.error}`),
        '',
        '',
      ]
        .join(' | ')
        .trim(),
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** With several modes: one misrouted-rows report per mode, one after the other. */
export function formatWrongRowsByMode(comparison: ModeComparison, dataset: string): string {
  return comparison.modes
    .map((run) =>
      formatWrongRowsReport(wrongRows(run.rows), { dataset, count: run.rows.length }).replace(
        /^# Misrouted rows/,
        `# Misrouted rows: ${run.mode}`,
      ),
    )
    .join('\n');
}
