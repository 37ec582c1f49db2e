import { describe, expect, it } from 'vitest';
import { REPORT_WIDTH, formatEvalReport } from './eval-report.js';
import { computeMetrics, type ScoredRow } from './metrics.js';

function row(expected: string, predicted: string, extra: Partial<ScoredRow> = {}): ScoredRow {
  return {
    expected,
    predicted,
    confidence: 0.85,
    method: 'local',
    timings: { rules: 0.2, local: 4 },
    durationMs: 5,
    ...extra,
  };
}

const small = computeMetrics([
  row('billing', 'billing'),
  row('billing', 'billing'),
  row('billing', 'refunds'),
  row('refunds', 'refunds', { method: 'rules', timings: { rules: 0.3 }, durationMs: 1 }),
  row('none', 'none', { confidence: 0.3 }),
]);

function lines(report: string): string[] {
  return report.trimEnd().split('\n');
}

describe('formatEvalReport', () => {
  it('shows the headline figures under the title', () => {
    const report = formatEvalReport(small, { title: 'CLINC150 test' });
    expect(lines(report)[0]).toBe('CLINC150 test');
    expect(report).toContain('Examples            5 (4 in scope, 1 out of scope)');
    expect(report).toContain('Accuracy            80.0% strict, 80.0% counting alternates');
    expect(report).toContain('In-scope accuracy   75.0%');
    expect(report).toContain('Out-of-scope recall 100.0% of none rows refused');
    expect(report).toMatch(/Macro-F1\s+0\.\d{3}/);
  });

  it('lists skills by support with aligned columns', () => {
    const report = lines(formatEvalReport(small));
    const header = report.findIndex((line) => line.startsWith('skill'));
    expect(header).toBeGreaterThan(0);
    const names = report.slice(header + 1, header + 4).map((line) => line.split(/\s+/)[0]);
    expect(names).toEqual(['billing', 'none', 'refunds']);
    expect(report[header + 1]).toMatch(/^billing\s+1\.000\s+0\.667\s+0\.800\s+3\s+2$/);
    // Right-aligned numeric columns end at the same place on every row.
    expect(new Set(report.slice(header, header + 4).map((line) => line.length)).size).toBe(1);
  });

  it('draws the confusion matrix with numbered columns for up to 20 labels', () => {
    const report = formatEvalReport(small);
    expect(report).toContain('rows: expected, columns: predicted');
    expect(report).toMatch(/1 billing\s+\|\s+2\s+\.\s+1/);
    expect(report).toMatch(/3 refunds\s+\|\s+\.\s+\.\s+1/);
  });

  it('lists the top 15 confusions when there are more than 20 labels', () => {
    const rows: ScoredRow[] = [];
    for (let index = 0; index < 30; index += 1) {
      const skill = `skill-${String(index).padStart(2, '0')}`;
      rows.push(row(skill, skill));
      // skill-00 is confused 30 times, skill-01 29 times, ...
      for (let repeat = 0; repeat < 30 - index; repeat += 1) rows.push(row(skill, 'none'));
    }
    const report = formatEvalReport(computeMetrics(rows));
    expect(report).not.toContain('rows: expected');
    expect(report).toContain('top 15 of 30 confusions (expected → predicted):');
    expect(report).toContain('  skill-00 → none: 30');
    expect(report).toContain('  skill-14 → none: 16');
    expect(report).not.toContain('skill-15 → none');
  });

  it('shows the ECE and non-empty calibration bins', () => {
    const report = formatEvalReport(small);
    expect(report).toMatch(/Calibration: ECE 0\.\d{3} over 10 equal-width confidence bins/);
    expect(report).toMatch(/0\.8–0\.9\s+4\s+0\.850\s+75\.0%/);
    expect(report).not.toContain('0.0–0.1');
  });

  it('shows latency per tier and the share of each method', () => {
    const report = formatEvalReport(small);
    expect(report).toMatch(/tier \(ms\)\s+count\s+p50\s+p95\s+p99\s+max/);
    expect(report).toMatch(/total\s+5\s+5\.0\s+5\.0\s+5\.0\s+5\.0/);
    expect(report).toMatch(/local\s+4\s+4\.0/);
    expect(report).toMatch(/rules\s+5\s+0\.20\s+0\.30/);
    expect(report).toContain('Decided by: local 80.0%, rules 20.0%');
  });

  it('keeps every line within the width, even with long names and many labels', () => {
    const long = 'a-very-long-skill-name-that-goes-on-and-on-well-past-any-sensible-column-width';
    const rows: ScoredRow[] = [];
    for (let index = 0; index < 20; index += 1) {
      rows.push(
        row(`${long}-${index}`, `${long}-${(index + 1) % 20}`, { method: `method-${long}-${index}` }),
      );
      for (let repeat = 0; repeat < 1234; repeat += 1) rows.push(row(`${long}-${index}`, `${long}-${index}`));
    }
    for (const metrics of [computeMetrics(rows), small]) {
      const report = formatEvalReport(metrics, { title: 'x'.repeat(200) });
      for (const line of lines(report)) expect(line.length).toBeLessThanOrEqual(REPORT_WIDTH);
    }
  });

  it('renders an empty run without throwing', () => {
    const report = formatEvalReport(computeMetrics([]));
    expect(report).toContain('Examples            0 (0 in scope, 0 out of scope)');
    expect(report).toContain('no confusions');
  });
});
