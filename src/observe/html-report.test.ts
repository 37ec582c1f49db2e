import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NONE, type RouteMode } from '../core/route-types.js';
import {
  agreementOf,
  compareModes,
  type ComparedRow,
  type ModeComparison,
  type ModeRun,
} from '../route/compare.js';
import { loadDataset } from '../route/datasets.js';
import { computeCalibration, computeMetrics, isCorrect, summariseLatency } from '../route/metrics.js';
import {
  BUCKETS_PER_DECADE,
  MAX_DISAGREEMENTS,
  latencyBucket,
  escapeHtml,
  latencyScale,
  renderHtmlReport,
} from './html-report.js';

const fixtures = join(import.meta.dirname, '../../test/fixtures');
const generatedAt = new Date('2026-01-02T03:04:05Z');

let stateDir: string;
let comparison: ModeComparison;
let html: string;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'switchboard-html-report-'));
  comparison = await compareModes(
    { skills: join(fixtures, 'skills'), stateDir },
    ['rules-only', 'local'],
    loadDataset(join(fixtures, 'dev.jsonl')),
  );
  html = renderHtmlReport(comparison, { title: 'Dev set', dataset: 'dev.jsonl', generatedAt });
});

afterAll(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

/** The markup of the one `<svg>` with this id (charts never nest). */
function chart(page: string, id: string): string {
  const start = page.indexOf(`<svg id="${id}"`);
  expect(start, `chart ${id}`).toBeGreaterThanOrEqual(0);
  return page.slice(start, page.indexOf('</svg>', start) + '</svg>'.length);
}

/** `data-count` of every element of this class, in document order. */
function counts(fragment: string, className: string): number[] {
  return [...fragment.matchAll(new RegExp(`class="${className}" data-count="(\\d+)"`, 'g'))].map((match) =>
    Number(match[1]),
  );
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function run(mode: RouteMode): ModeRun {
  const found = comparison.modes.find((candidate) => candidate.mode === mode);
  if (found === undefined) throw new Error(`no ${mode} run`);
  return found;
}

describe('renderHtmlReport', () => {
  it('is one page with every section, and a chart of each kind per mode', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('<title>Dev set</title>');
    expect(html).toContain('generated 2026-01-02T03:04:05.000Z');
    for (const section of [
      'summary',
      'agreement',
      'tier-mix',
      'latency',
      'confusion',
      'calibration',
      'disagreements',
    ]) {
      expect(html).toContain(`<section id="${section}">`);
    }
    const charts = [...html.matchAll(/<svg id="([^"]+)" data-chart="([^"]+)"/g)];
    expect(charts.map((match) => match[2]).sort()).toEqual([
      'calibration',
      'calibration',
      'confusion',
      'confusion',
      'latency-histogram',
      'latency-histogram',
      'tier-mix',
    ]);
    const ids = charts.map((match) => match[1]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('chart-latency-rules-only');
    expect(ids).toContain('chart-confusion-local');
  });

  it('summarises each mode in one table row', () => {
    const table = html.slice(html.indexOf('<table data-table="summary">'), html.indexOf('</table>'));
    expect(table.match(/<tr>/g)).toHaveLength(1 + comparison.modes.length);
    const local = run('local').metrics;
    const row = table.slice(table.indexOf('<th scope="row">local</th>'));
    expect(row).toContain(`<td>${(local.accuracy * 100).toFixed(1)}%</td>`);
    expect(row).toContain(`<td>${local.macroF1.toFixed(3)}</td>`);
    expect(row).toContain('<td>$0</td>');
  });

  it('shows the agreement matrix with each mode agreeing fully with itself', () => {
    const table = html.slice(html.indexOf('<table data-table="agreement">'));
    const rates = [...table.slice(0, table.indexOf('</table>')).matchAll(/data-rate="([\d.]+)"/g)].map(
      (match) => Number(match[1]),
    );
    const [[first, second], [third, fourth]] = comparison.agreement.rates as [number[], number[]];
    expect(rates).toEqual([first, second, third, fourth].map((rate) => Number((rate ?? 0).toFixed(4))));
    expect(rates[0]).toBe(1);
    expect(rates[3]).toBe(1);
  });

  it('stacks each mode’s tier shares to the whole bar, with a legend entry per tier', () => {
    const tierMix = chart(html, 'chart-tier-mix');
    for (const mode of comparison.modes) {
      const shares = Object.values(mode.metrics.methodShare).filter((share) => share > 0);
      const drawn = tierMix.match(new RegExp(`class="segment" data-mode="${mode.mode}"`, 'g'));
      expect(drawn).toHaveLength(shares.length);
    }
    const widths = [...tierMix.matchAll(/class="segment"[^>]*width="([\d.]+)"/g)].map((match) =>
      Number(match[1]),
    );
    expect(sum(widths)).toBeCloseTo(600 * comparison.modes.length, 0);
    const methods = new Set(comparison.modes.flatMap((mode) => Object.keys(mode.metrics.methodShare)));
    const legend = html.slice(
      html.indexOf('data-legend="tier-mix"'),
      html.indexOf('</ul>', html.indexOf('data-legend')),
    );
    expect(legend.match(/<li /g)).toHaveLength(methods.size);
    for (const method of methods) expect(legend).toContain(`>${method}</li>`);
  });

  it('puts every request in exactly one latency bucket', () => {
    for (const mode of comparison.modes) {
      const bars = counts(chart(html, `chart-latency-${mode.mode}`), 'bar');
      expect(bars.length).toBeGreaterThan(0);
      expect(sum(bars)).toBe(comparison.count);
    }
  });

  it('draws labels² heatmap cells that add up to the rows, and lists the confusions', () => {
    for (const mode of comparison.modes) {
      const { labels, counts: matrix } = mode.metrics.confusion;
      const heatmap = chart(html, `chart-confusion-${mode.mode}`);
      const cells = counts(heatmap, 'cell');
      expect(cells).toHaveLength(labels.length ** 2);
      expect(sum(cells)).toBe(comparison.count);
      expect(heatmap).toContain(`data-labels="${labels.length}"`);
      for (const label of labels) expect(heatmap).toContain(`>${label}<title>`);
      const offDiagonal = matrix.flatMap((row, i) => row.filter((value, j) => i !== j && value > 0)).length;
      const list = html.slice(html.indexOf(`<ol data-list="top-confusions" data-mode="${mode.mode}">`));
      if (offDiagonal === 0) {
        expect(html).not.toContain(`data-list="top-confusions" data-mode="${mode.mode}"`);
      } else {
        expect(list.slice(0, list.indexOf('</ol>')).match(/<li>/g)).toHaveLength(Math.min(offDiagonal, 15));
      }
    }
  });

  it('plots a calibration point and a count bar for each non-empty bin only, with the ECE, abstentions left out', () => {
    for (const mode of comparison.modes) {
      const calibration = chart(html, `chart-calibration-${mode.mode}`);
      const answered = computeCalibration(mode.rows.filter((row) => row.predicted !== NONE));
      const filled = answered.bins.filter((bin) => bin.count > 0).map((bin) => bin.count);
      expect(counts(calibration, 'point')).toEqual(filled);
      expect(counts(calibration, 'bin')).toEqual(filled);
      const abstained = mode.rows.filter((row) => row.predicted === NONE).length;
      expect(abstained).toBeGreaterThan(0);
      expect(sum(filled)).toBe(comparison.count - abstained);
      expect(calibration).toContain(`ECE ${answered.ece.toFixed(3)}`);
      expect(calibration).toContain('class="diagonal"');
    }
  });

  it('tables precision, recall and F1 per skill for each mode', () => {
    for (const mode of comparison.modes) {
      const start = html.indexOf(`<table data-table="per-skill" data-mode="${mode.mode}">`);
      expect(start).toBeGreaterThan(0);
      const table = html.slice(start, html.indexOf('</table>', start));
      for (const skill of mode.metrics.perSkill) {
        expect(table).toContain(
          `<th scope="row">${skill.skill}</th><td>${skill.precision.toFixed(3)}</td><td>${skill.recall.toFixed(3)}</td><td>${skill.f1.toFixed(3)}</td>`,
        );
      }
    }
  });

  it('lists the rows each mode routed wrongly, with the request text', () => {
    for (const mode of comparison.modes) {
      const wrong = mode.rows.filter((row) => !isCorrect(row));
      expect(html).toContain(`<p data-total="${wrong.length}" data-mode="${mode.mode}">`);
      const first = wrong[0];
      if (first === undefined) continue;
      const start = html.indexOf(`<table data-table="misrouted" data-mode="${mode.mode}">`);
      const table = html.slice(start, html.indexOf('</table>', start));
      expect(table.match(/<tr><td>/g)).toHaveLength(wrong.length);
      expect(table).toContain(escapeHtml(first.text ?? ''));
    }
  });

  it('tables the disagreements with their total', () => {
    const total = comparison.disagreements.length;
    expect(total).toBeGreaterThan(0);
    expect(html).toContain(`<p data-total="${total}">`);
    const table = html.slice(html.indexOf('<table data-table="disagreements">'));
    expect(table.slice(0, table.indexOf('</table>')).match(/<tr>/g)).toHaveLength(1 + total);
    for (const disagreement of comparison.disagreements) expect(table).toContain(disagreement.text);
  });

  it('lists at most the first 200 disagreements and says how many there were', () => {
    const first = comparison.disagreements[0];
    if (first === undefined) throw new Error('the fixtures should disagree at least once');
    const many = Array.from({ length: 250 }, (_, index) => ({ ...first, index, text: `request ${index}` }));
    const page = renderHtmlReport({ ...comparison, disagreements: many }, { title: 't', dataset: 'd' });
    expect(page).toContain('The first 200 of 250 examples');
    expect(page).toContain('<td class="text">request 199</td>');
    expect(page).not.toContain('request 200<');
    expect(page.match(/<td class="text">request /g)).toHaveLength(MAX_DISAGREEMENTS);
  });

  it('renders hostile text as text', () => {
    const hostile = '<script>alert(1)</script> "quoted" & \'single\'';
    const [first] = comparison.disagreements;
    if (first === undefined) throw new Error('the fixtures should disagree at least once');
    const local = run('local');
    const poisoned: ModeComparison = {
      ...comparison,
      modes: comparison.modes.map((mode) =>
        mode === local
          ? {
              ...local,
              warnings: [hostile],
              metrics: {
                ...local.metrics,
                confusion: {
                  ...local.metrics.confusion,
                  labels: local.metrics.confusion.labels.map(() => hostile),
                },
              },
            }
          : mode,
      ),
      disagreements: [{ ...first, text: hostile, expected: hostile, alternates: [hostile] }],
    };
    const page = renderHtmlReport(poisoned, { title: hostile, dataset: hostile });
    expect(page).not.toContain('<script');
    expect(page).not.toContain('"quoted"');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; &#39;single&#39;');
    expect(page).toContain(
      '<td class="text">&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; &#39;single&#39;</td>',
    );
  });

  it('refers to nothing outside the page and runs no script', () => {
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/\bsrc\s*=/i);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    for (const [, target] of html.matchAll(/href="([^"]*)"/g)) expect(target).toMatch(/^#[a-z-]+$/);
  });

  it('works with one mode', async () => {
    const single = await compareModes(
      { skills: join(fixtures, 'skills'), stateDir },
      ['local'],
      loadDataset(join(fixtures, 'dev.jsonl')),
    );
    const page = renderHtmlReport(single, { title: 'One', dataset: 'dev.jsonl' });
    expect(page.match(/data-chart="latency-histogram"/g)).toHaveLength(1);
    expect(page.match(/data-chart="confusion"/g)).toHaveLength(1);
    expect(page.match(/data-chart="calibration"/g)).toHaveLength(1);
    expect(page).toContain('One mode only: nothing to compare.');
    expect(sum(counts(chart(page, 'chart-latency-local'), 'bar'))).toBe(single.count);
    expect(page).not.toMatch(/NaN|Infinity/);
  });

  it('survives a dataset where every decision took no time', () => {
    const zeroLatency = (mode: ModeRun): ModeRun => {
      const rows = mode.rows.map((row) => ({ ...row, durationMs: 0, timings: {} }));
      return { ...mode, rows, metrics: computeMetrics(rows), overhead: summariseLatency(rows.map(() => 0)) };
    };
    const still = { ...comparison, modes: comparison.modes.map(zeroLatency) };
    const page = renderHtmlReport(still, { title: 'Zero', dataset: 'zero' });
    expect(page).not.toMatch(/NaN|Infinity/);
    for (const mode of still.modes) {
      expect(counts(chart(page, `chart-latency-${mode.mode}`), 'bar')).toEqual([comparison.count]);
    }
  });

  it('stays small and readable for CLINC150: 5,500 rows, 151 labels, 3 modes', () => {
    const large = syntheticComparison(5500, 151, ['rules-only', 'local', 'hybrid']);
    const page = renderHtmlReport(large, { title: 'CLINC150', dataset: 'data_full.json' });
    expect(Buffer.byteLength(page)).toBeLessThan(1_000_000);
    expect(page).not.toMatch(/NaN|Infinity/);
    for (const mode of large.modes) {
      const heatmap = chart(page, `chart-confusion-${mode.mode}`);
      const nonZero = mode.metrics.confusion.counts.flat().filter((value) => value > 0).length;
      // Only cells with rows are drawn; hover strips on both axes name the 151 labels.
      expect(counts(heatmap, 'cell')).toHaveLength(nonZero);
      expect(sum(counts(heatmap, 'cell'))).toBe(5500);
      expect(mode.metrics.confusion.labels).toHaveLength(151);
      expect(heatmap.match(/class="axis-label"/g)).toHaveLength(2 * 151);
      expect(heatmap).toMatch(/width="(\d+)"/);
      expect(Number(/width="(\d+)"/.exec(heatmap)?.[1])).toBeLessThanOrEqual(700);
      expect(sum(counts(chart(page, `chart-latency-${mode.mode}`), 'bar'))).toBe(5500);
    }
  });

  it('rejects an invalid generatedAt', () => {
    expect(() =>
      renderHtmlReport(comparison, { title: 't', dataset: 'd', generatedAt: new Date('nope') }),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining('generatedAt') }),
    );
  });
});

describe('latency buckets', () => {
  it('spans ~0.01 ms to seconds in log steps, and puts zero in the first bucket', () => {
    const scale = latencyScale([0, 0.012, 0.5, 40, 2300]);
    expect(scale.lowestExponent).toBe(-2);
    expect(scale.highestExponent).toBe(4);
    expect(scale.edges).toHaveLength(6 * BUCKETS_PER_DECADE + 1);
    expect(scale.edges[BUCKETS_PER_DECADE]).toBeCloseTo(0.1, 10);
    expect(latencyBucket(scale, 0)).toBe(0);
    expect(latencyBucket(scale, 0.012)).toBe(0);
    expect(latencyBucket(scale, 0.1)).toBe(BUCKETS_PER_DECADE);
    expect(latencyBucket(scale, 2300)).toBe(5 * BUCKETS_PER_DECADE + 1);
    expect(latencyBucket(scale, Number.NaN)).toBe(0);
    expect(latencyBucket(scale, 1e9)).toBe(scale.edges.length - 2);
  });

  it('keeps a sane axis when there is no positive latency', () => {
    const scale = latencyScale([0, 0, -1]);
    expect(scale.edges.every(Number.isFinite)).toBe(true);
    expect(scale.highestExponent).toBeGreaterThan(scale.lowestExponent);
  });
});

/**
 * A comparison shaped like CLINC150's test split: `labels - 1` intents plus `none`, a fifth of the
 * rows out of scope, the local modes right about nine times in ten and rules-only abstaining.
 */
function syntheticComparison(rowCount: number, labelCount: number, modes: RouteMode[]): ModeComparison {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const intents = Array.from({ length: labelCount - 1 }, (_, index) => `intent_number_${index}`);
  let inScope = 0;
  const expected = Array.from({ length: rowCount }, (_, index) =>
    index % 5 === 0 ? NONE : (intents[inScope++ % intents.length] as string),
  );
  const texts = expected.map((_, index) => `how would I say something quite ordinary, request ${index}`);
  const runs = modes.map((mode): ModeRun => {
    const rows = expected.map((label): ComparedRow => {
      const rulesOnly = mode === 'rules-only';
      const right = !rulesOnly && random() < 0.9;
      const predicted = rulesOnly
        ? NONE
        : right
          ? label
          : (intents[Math.floor(random() * intents.length)] as string);
      return {
        expected: label,
        predicted,
        confidence: rulesOnly ? 0 : random(),
        method: rulesOnly ? 'default' : 'local',
        timings: rulesOnly ? { rules: 0.002 } : { rules: 0.002, local: 0.1 },
        durationMs: rulesOnly ? 0.002 + random() * 0.001 : 0.1 + random() ** 8 * 30,
        costUsd: 0,
      };
    });
    return {
      mode,
      metrics: computeMetrics(rows),
      rows,
      llmShare: 0,
      totalCostUsd: 0,
      costPer1k: 0,
      overhead: summariseLatency(rows.map((row) => row.durationMs)),
      errors: 0,
      llmCalls: 0,
      failedLlmCalls: 0,
      providerFailures: [],
      warnings: [],
    };
  });
  const examples = expected.map((label, index) => ({ text: texts[index] as string, expected: label }));
  return { count: rowCount, modes: runs, ...agreementOf(runs, examples) };
}
