import { SwitchboardError } from '../core/errors.js';
import type { ComparedRow, Disagreement, ModeComparison, ModeRun } from '../route/compare.js';
import { NONE } from '../core/route-types.js';
import { computeCalibration, type Calibration, type ConfusionMatrix } from '../route/metrics.js';
import { misroutedSection, perSkillSection } from './html-report-rows.js';

export interface HtmlReportOptions {
  /** The page's heading and `<title>`. */
  title: string;
  /** What was routed, shown under the title (a file name or a dataset reference). */
  dataset: string;
  /** When the comparison ran. @default the current time */
  generatedAt?: Date;
}

/** The disagreements table lists this many examples; the total is always given. */
export const MAX_DISAGREEMENTS = 200;
/** Up to this many labels the confusion heatmap draws every cell and names its axes. */
export const FULL_MATRIX_LABELS = 40;
/** Log-spaced latency buckets per power of ten. */
export const BUCKETS_PER_DECADE = 4;
const TOP_CONFUSIONS = 15;
/** Side of the confusion heatmap in pixels, before axis labels. */
const MATRIX_SIZE = 600;
/** Latencies below this (1 µs) all land in the first bucket, so zeros cannot stretch the axis. */
const LOWEST_LATENCY_EXPONENT = -3;

/** Methods in the order the router tries them, each with a colour kept the same in every chart. */
const METHOD_COLOURS: Readonly<Record<string, string>> = {
  cache: '#8c6bb1',
  rules: '#2b8cbe',
  local: '#41ab5d',
  llm: '#f08a24',
  fallback: '#e7298a',
  default: '#8c8c8c',
  error: '#cb181d',
};
const OTHER_METHOD_COLOUR = '#c7c7c7';

/**
 * Renders a mode comparison as one self-contained HTML page: inline CSS, charts as inline SVG, no
 * script and no external reference, so it opens offline and can be attached to a CI run. Every piece
 * of text from the dataset, the skills or the router is escaped.
 */
export function renderHtmlReport(comparison: ModeComparison, options: HtmlReportOptions): string {
  const { title, dataset, generatedAt = new Date() } = options;
  if (!(generatedAt instanceof Date) || Number.isNaN(generatedAt.getTime())) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "generatedAt" to be a valid Date');
  }
  const modes = comparison.modes;
  const sections = [
    summarySection(comparison),
    agreementSection(comparison),
    tierMixSection(modes),
    latencySection(modes),
    perSkillSection(modes, escapeHtml),
    confusionSection(modes),
    calibrationSection(modes),
    disagreementsSection(comparison),
    misroutedSection(modes, escapeHtml),
  ];
  const navigation = [
    ['summary', 'Summary'],
    ['agreement', 'Agreement'],
    ['tier-mix', 'Tier mix'],
    ['latency', 'Latency'],
    ['per-skill', 'Per skill'],
    ['confusion', 'Confusion'],
    ['calibration', 'Calibration'],
    ['disagreements', 'Disagreements'],
    ['misrouted', 'Misrouted'],
  ]
    .map(([id, label]) => `<a href="#${id}">${label}</a>`)
    .join(' ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p class="meta">Dataset <strong>${escapeHtml(dataset)}</strong> · ${count(comparison.count)} examples · modes ${modes
    .map((run) => `<strong>${escapeHtml(run.mode)}</strong>`)
    .join(', ')} · generated ${escapeHtml(generatedAt.toISOString())}</p>
<nav>${navigation}</nav>
</header>
<main>
${sections.join('\n')}
</main>
</body>
</html>
`;
}

const STYLE = `
:root{color-scheme:light;--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--ok:#1a7f37;--bad:#cf222e}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#fff}
header,main{max-width:1280px;margin:0 auto;padding:0 24px}
header{padding-top:20px;border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:1px solid var(--line)}
h3{font-size:14px;margin:12px 0 6px}
.meta,.note{color:var(--muted)}
nav{padding:6px 0 12px}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
table{border-collapse:collapse;margin:6px 0}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
th:first-child,td:first-child{text-align:left}
th[scope=row]{white-space:nowrap}
table[data-table=disagreements] th{text-align:left}
td.text{text-align:left;max-width:420px;overflow-wrap:anywhere}
td.ok{color:var(--ok);text-align:left}
td.bad{color:var(--bad);text-align:left}
td small{color:var(--muted)}
.figures{display:flex;flex-wrap:wrap;gap:16px 28px;align-items:flex-start}
figure{margin:0}
figcaption{font-weight:600;margin-bottom:4px}
svg{display:block;overflow:visible}
svg text{font:11px system-ui,sans-serif;fill:var(--ink)}
svg .axis{stroke:#8c959f;stroke-width:1}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg .marker{stroke-width:1.5;stroke-dasharray:4 3}
.confusion-list{min-width:260px;max-width:380px}
.confusion-list ol{margin:0;padding-left:22px}
.confusion-list li{overflow-wrap:anywhere}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0;padding:0;list-style:none}
.legend li::before{content:"";display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px;background:var(--swatch)}
ul.warnings{margin:4px 0;padding-left:20px}
`;

// --- Sections ----------------------------------------------------------------------------------

function summarySection(comparison: ModeComparison): string {
  const header = [
    'Mode',
    'Accuracy',
    'Accuracy (alternates)',
    'Macro-F1',
    'Abstain rate',
    'LLM share',
    'p50 latency',
    'p95 latency',
    'Overhead p95',
    'Cost / 1,000',
    'Errors',
    'Warnings',
  ];
  const rows = comparison.modes.map((run) => {
    const { metrics } = run;
    return [
      `<th scope="row">${escapeHtml(run.mode)}</th>`,
      cell(percent(metrics.accuracy)),
      cell(percent(metrics.accuracyWithAlternates)),
      cell(fixed(metrics.macroF1, 3)),
      cell(percent(metrics.abstainRate)),
      cell(percent(run.llmShare)),
      cell(milliseconds(metrics.latency.overall.p50)),
      cell(milliseconds(metrics.latency.overall.p95)),
      cell(milliseconds(run.overhead.p95)),
      cell(dollars(run.costPer1k)),
      cell(count(run.errors)),
      cell(count(run.warnings.length)),
    ].join('');
  });
  const notes = comparison.modes.flatMap((run) => [
    ...run.warnings.map(
      (warning) => `<li><strong>${escapeHtml(run.mode)}</strong>: ${escapeHtml(warning)}</li>`,
    ),
    ...errorExamples(run.rows).map(
      ([message, times]) =>
        `<li><strong>${escapeHtml(run.mode)}</strong> error (${count(times)}×): ${escapeHtml(message)}</li>`,
    ),
  ]);
  return `<section id="summary">
<h2>Summary</h2>
<table data-table="summary">
<thead><tr>${header.map((label) => `<th scope="col">${label}</th>`).join('')}</tr></thead>
<tbody>
${rows.map((row) => `<tr>${row}</tr>`).join('\n')}
</tbody>
</table>
<p class="note">Accuracy is strict; “alternates” also counts answers the dataset lists as acceptable. Latency is the
router's whole decision; overhead leaves out the time spent inside provider calls (the model's own time). LLM share is the share of requests that
called an LLM.</p>
${notes.length === 0 ? '' : `<ul class="warnings" data-list="notes">${notes.join('')}</ul>`}
</section>`;
}

/** The most frequent distinct error messages of a mode (five at most), most frequent first. */
function errorExamples(rows: readonly ComparedRow[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const row of rows) {
    if (row.error !== undefined) counts.set(row.error, (counts.get(row.error) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 5);
}

function agreementSection(comparison: ModeComparison): string {
  const { modes, rates } = comparison.agreement;
  const header = `<tr><th></th>${modes.map((mode) => `<th scope="col">${escapeHtml(mode)}</th>`).join('')}</tr>`;
  const rows = modes.map((mode, i) => {
    const cells = modes.map((_, j) => {
      const rate = finite(rates[i]?.[j] ?? 0);
      // Disagreement is what the reader looks for, so the shade grows as agreement falls.
      const shade = Math.round(100 - 45 * (1 - rate));
      return `<td data-rate="${fixed(rate, 4)}" style="background:hsl(210,70%,${shade}%)">${percent(rate)}</td>`;
    });
    return `<tr><th scope="row">${escapeHtml(mode)}</th>${cells.join('')}</tr>`;
  });
  return `<section id="agreement">
<h2>Agreement between modes</h2>
<table data-table="agreement">
<thead>${header}</thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
<p class="note">Share of the ${count(comparison.count)} examples on which two modes chose the same skill (abstaining included).</p>
</section>`;
}

function tierMixSection(runs: readonly ModeRun[]): string {
  const methods = methodOrder(runs);
  const labelWidth = 110;
  const barWidth = 600;
  const barHeight = 22;
  const rowHeight = 32;
  const height = runs.length * rowHeight;
  const bars = runs.map((run, index) => {
    const y = index * rowHeight;
    let x = labelWidth;
    const segments = methods.flatMap((method) => {
      const share = finite(run.metrics.methodShare[method] ?? 0);
      if (share <= 0) return [];
      const width = share * barWidth;
      const requests = Math.round(share * run.metrics.count);
      const segment = `<rect class="segment" data-mode="${escapeHtml(run.mode)}" data-method="${escapeHtml(method)}" data-share="${fixed(share, 4)}" x="${coordinate(x)}" y="${y}" width="${coordinate(width)}" height="${barHeight}" fill="${methodColour(method)}"><title>${escapeHtml(run.mode)} · ${escapeHtml(method)}: ${percent(share)} (${count(requests)} requests)</title></rect>${
        width >= 44
          ? `<text x="${coordinate(x + width / 2)}" y="${y + 15}" text-anchor="middle" style="fill:#fff">${percent(share)}</text>`
          : ''
      }`;
      x += width;
      return [segment];
    });
    return `<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escapeHtml(run.mode)}</text>${segments.join('')}`;
  });
  const legend = methods
    .map((method) => `<li style="--swatch:${methodColour(method)}">${escapeHtml(method)}</li>`)
    .join('');
  return `<section id="tier-mix">
<h2>Tier mix</h2>
<p class="note">Which tier decided each request.</p>
<svg id="chart-tier-mix" data-chart="tier-mix" role="img" aria-label="Share of requests decided by each tier, per mode" width="${labelWidth + barWidth}" height="${height}" viewBox="0 0 ${labelWidth + barWidth} ${height}">
${bars.join('\n')}
</svg>
<ul class="legend" data-legend="tier-mix">${legend}</ul>
</section>`;
}

/** Known methods in routing order, then any other method a run reported, alphabetically. */
function methodOrder(runs: readonly ModeRun[]): string[] {
  const present = new Set(runs.flatMap((run) => Object.keys(run.metrics.methodShare)));
  const known = Object.keys(METHOD_COLOURS).filter((method) => present.has(method));
  const others = [...present].filter((method) => !(method in METHOD_COLOURS)).sort();
  return [...known, ...others];
}

function methodColour(method: string): string {
  return METHOD_COLOURS[method] ?? OTHER_METHOD_COLOUR;
}

// --- Latency -----------------------------------------------------------------------------------

/** Log-spaced bucket edges shared by every mode, so their histograms line up. */
interface LatencyScale {
  lowestExponent: number;
  highestExponent: number;
  /** `edges.length - 1` buckets; bucket `i` is `[edges[i], edges[i + 1])`. */
  edges: number[];
}

/** Exported for tests: the buckets that cover these latencies in milliseconds. */
export function latencyScale(values: Iterable<number>): LatencyScale {
  let smallest = Number.POSITIVE_INFINITY;
  let largest = 0;
  for (const value of values) {
    if (!(Number.isFinite(value) && value > 0)) continue;
    smallest = Math.min(smallest, value);
    largest = Math.max(largest, value);
  }
  const lowestExponent =
    largest > 0
      ? Math.max(Math.floor(Math.log10(smallest)), LOWEST_LATENCY_EXPONENT)
      : LOWEST_LATENCY_EXPONENT;
  const highestExponent = Math.max(
    largest > 0 ? Math.ceil(Math.log10(largest)) : lowestExponent + 1,
    lowestExponent + 1,
  );
  const bucketCount = (highestExponent - lowestExponent) * BUCKETS_PER_DECADE;
  const edges = Array.from(
    { length: bucketCount + 1 },
    (_, k) => 10 ** (lowestExponent + k / BUCKETS_PER_DECADE),
  );
  return { lowestExponent, highestExponent, edges };
}

/** The bucket a latency falls in; zero, negative and non-finite values go to the ends. */
export function latencyBucket(scale: LatencyScale, value: number): number {
  const last = scale.edges.length - 2;
  if (Number.isNaN(value) || value <= (scale.edges[0] as number)) return 0;
  if (value === Number.POSITIVE_INFINITY) return last;
  const position = Math.floor((Math.log10(value) - scale.lowestExponent) * BUCKETS_PER_DECADE + 1e-9);
  return Math.min(Math.max(position, 0), last);
}

function latencySection(runs: readonly ModeRun[]): string {
  const scale = latencyScale(runs.flatMap((run) => run.rows.map((row) => row.durationMs)));
  const histograms = runs.map((run) => {
    const counts = scale.edges.slice(1).map(() => 0);
    for (const row of run.rows) {
      const bucket = latencyBucket(scale, row.durationMs);
      counts[bucket] = (counts[bucket] ?? 0) + 1;
    }
    return counts;
  });
  const highest = Math.max(1, ...histograms.flat());
  const figures = runs.map((run, index) => latencyHistogram(run, histograms[index] ?? [], scale, highest));
  return `<section id="latency">
<h2>Latency</h2>
<p class="note">Decision time per request on a log scale (${BUCKETS_PER_DECADE} buckets per power of ten, the same for every mode); dashed lines mark p50 and p95.</p>
<div class="figures">
${figures.join('\n')}
</div>
</section>`;
}

function latencyHistogram(
  run: ModeRun,
  counts: readonly number[],
  scale: LatencyScale,
  highest: number,
): string {
  const left = 44;
  const top = 26;
  const plotWidth = 520;
  const plotHeight = 150;
  const width = left + plotWidth + 16;
  const height = top + plotHeight + 36;
  const bucketWidth = plotWidth / counts.length;
  const decades = scale.highestExponent - scale.lowestExponent;
  const xOf = (milliseconds: number): number => {
    const lowest = scale.edges[0] as number;
    const exponent = Math.log10(Math.max(milliseconds, lowest));
    return left + Math.min(Math.max((exponent - scale.lowestExponent) / decades, 0), 1) * plotWidth;
  };
  const yOf = (value: number): number => top + plotHeight - (value / highest) * plotHeight;
  const lastBucket = counts.length - 1;
  const bars = counts.flatMap((value, bucket) => {
    if (value === 0) return [];
    const lower = scale.edges[bucket] as number;
    const upper = scale.edges[bucket + 1] as number;
    const range =
      bucket === 0
        ? `≤ ${duration(upper)}`
        : bucket === lastBucket
          ? `≥ ${duration(lower)}`
          : `${duration(lower)}–${duration(upper)}`;
    // A linear axis would flatten the slow tail to nothing; a non-empty bucket stays visible.
    const y = Math.min(yOf(value), top + plotHeight - 2);
    return [
      `<rect class="bar" data-count="${value}" x="${coordinate(left + bucket * bucketWidth + 1)}" y="${coordinate(y)}" width="${coordinate(Math.max(bucketWidth - 2, 1))}" height="${coordinate(top + plotHeight - y)}" fill="#4c78a8"><title>${range}: ${count(value)} requests</title></rect>`,
    ];
  });
  const ticks = Array.from({ length: decades + 1 }, (_, k) => {
    const exponent = scale.lowestExponent + k;
    const x = coordinate(left + (k / decades) * plotWidth);
    return `<line class="grid" x1="${x}" y1="${top}" x2="${x}" y2="${top + plotHeight}"/><text x="${x}" y="${top + plotHeight + 16}" text-anchor="middle">${duration(10 ** exponent)}</text>`;
  });
  const summary = run.metrics.latency.overall;
  const markers =
    summary.count === 0
      ? []
      : (
          [
            ['p50', summary.p50, '#1a7f37'],
            ['p95', summary.p95, '#cf222e'],
          ] as const
        ).map(([label, value, colour], position) => {
          const x = coordinate(xOf(value));
          return `<line class="marker" data-marker="${label}" x1="${x}" y1="${top}" x2="${x}" y2="${top + plotHeight}" stroke="${colour}"><title>${label} ${duration(value)}</title></line><text x="${x}" y="${top - 10}" text-anchor="${position === 0 ? 'end' : 'start'}" style="fill:${colour}">${label} ${duration(value)}</text>`;
        });
  const id = `chart-latency-${slug(run.mode)}`;
  return `<figure>
<figcaption>${escapeHtml(run.mode)} <span class="note">(${count(run.rows.length)} requests)</span></figcaption>
<svg id="${id}" data-chart="latency-histogram" data-mode="${escapeHtml(run.mode)}" role="img" aria-label="Latency histogram for ${escapeHtml(run.mode)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
${ticks.join('')}
<line class="axis" x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}"/>
<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${top + plotHeight}"/>
<text x="${left - 6}" y="${top + 4}" text-anchor="end">${count(highest)}</text>
<text x="${left - 6}" y="${top + plotHeight}" text-anchor="end">0</text>
${bars.join('\n')}
${markers.join('')}
<text x="${left + plotWidth / 2}" y="${height - 2}" text-anchor="middle" class="note">decision time</text>
</svg>
</figure>`;
}

// --- Confusion ---------------------------------------------------------------------------------

function confusionSection(runs: readonly ModeRun[]): string {
  const figures = runs.map((run) => {
    const { confusion } = run.metrics;
    return `<div class="figures" data-mode="${escapeHtml(run.mode)}">
<figure>
<figcaption>${escapeHtml(run.mode)} <span class="note">(${count(confusion.labels.length)} labels; rows expected, columns predicted)</span></figcaption>
${confusionHeatmap(run.mode, confusion)}
</figure>
${topConfusions(run.mode, confusion)}
</div>`;
  });
  return `<section id="confusion">
<h2>Confusion</h2>
<p class="note">Shade is the share of each expected label's rows: green on the diagonal (right), red off it (wrong). Hover a cell for its labels and count.</p>
${figures.join('\n')}
</section>`;
}

function confusionHeatmap(mode: string, confusion: ConfusionMatrix): string {
  const { labels, counts } = confusion;
  const size = labels.length;
  const full = size <= FULL_MATRIX_LABELS;
  const cellSize = Math.min(Math.max(Math.floor(MATRIX_SIZE / Math.max(size, 1)), 3), 28);
  const longest = Math.max(0, ...labels.map((label) => Math.min(label.length, 28)));
  // With names, the axes need room for them; without, a thin hover strip names each row and column.
  const margin = full ? Math.min(20 + longest * 6.5, 200) : 14;
  const side = size * cellSize;
  const width = margin + side + 4;
  const height = margin + side + 4;
  const rowTotals = counts.map((row) => row.reduce((sum, value) => sum + value, 0));
  const cells: string[] = [];
  for (let i = 0; i < size; i += 1) {
    for (let j = 0; j < size; j += 1) {
      const value = counts[i]?.[j] ?? 0;
      if (value === 0 && !full) continue;
      const share = finite(value / Math.max(rowTotals[i] ?? 0, 1));
      const expected = labels[i] ?? '';
      const predicted = labels[j] ?? '';
      const fill = value === 0 ? '#f6f8fa' : heatColour(share, i === j);
      const x = margin + j * cellSize;
      const y = margin + i * cellSize;
      const label =
        full && value > 0 && cellSize >= 20
          ? `<text x="${x + cellSize / 2}" y="${y + cellSize / 2 + 4}" text-anchor="middle"${share > 0.55 ? ' style="fill:#fff"' : ''}>${value}</text>`
          : '';
      cells.push(
        `<rect class="cell" data-count="${value}" x="${x}" y="${y}" width="${cellSize}" height="${cellSize}" fill="${fill}"><title>${escapeHtml(expected)} → ${escapeHtml(predicted)}: ${count(value)} (${percent(share)} of ${escapeHtml(expected)})</title></rect>${label}`,
      );
    }
  }
  const axes = labels.map((label, position) => {
    const offset = margin + position * cellSize;
    const title = `<title>${escapeHtml(label)} (${count(rowTotals[position] ?? 0)} rows)</title>`;
    if (!full) {
      return `<rect class="axis-label" x="0" y="${offset}" width="${margin - 2}" height="${cellSize}" fill="#d0d7de">${title}</rect><rect class="axis-label" x="${offset}" y="0" width="${cellSize}" height="${margin - 2}" fill="#d0d7de"><title>predicted ${escapeHtml(label)}</title></rect>`;
    }
    const middle = offset + cellSize / 2 + 4;
    const shown = escapeHtml(shorten(label, 28));
    return `<text x="${margin - 6}" y="${middle}" text-anchor="end">${shown}${title}</text><text transform="translate(${middle - 4},${margin - 6}) rotate(-90)">${shown}<title>predicted ${escapeHtml(label)}</title></text>`;
  });
  const background = full
    ? ''
    : `<rect class="matrix-background" x="${margin}" y="${margin}" width="${side}" height="${side}" fill="#f6f8fa"/>`;
  return `<svg id="chart-confusion-${slug(mode)}" data-chart="confusion" data-mode="${escapeHtml(mode)}" data-labels="${size}" data-cells="${cells.length}" role="img" aria-label="Confusion matrix for ${escapeHtml(mode)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
${background}${axes.join('')}
${cells.join('\n')}
</svg>`;
}

/** Light to saturated: green for the diagonal, red for confusions; square root so small shares show. */
function heatColour(share: number, diagonal: boolean): string {
  const lightness = Math.round(94 - 58 * Math.sqrt(Math.min(Math.max(share, 0), 1)));
  return diagonal ? `hsl(140,55%,${lightness}%)` : `hsl(6,78%,${lightness}%)`;
}

function topConfusions(mode: string, confusion: ConfusionMatrix): string {
  const { labels, counts } = confusion;
  const pairs: { expected: string; predicted: string; value: number; share: number }[] = [];
  let total = 0;
  counts.forEach((row, i) => {
    const rowTotal = row.reduce((sum, value) => sum + value, 0);
    row.forEach((value, j) => {
      if (i === j || value === 0) return;
      total += 1;
      pairs.push({ expected: labels[i] ?? '', predicted: labels[j] ?? '', value, share: value / rowTotal });
    });
  });
  pairs.sort(
    (a, b) =>
      b.value - a.value || compareText(a.expected, b.expected) || compareText(a.predicted, b.predicted),
  );
  const shown = pairs.slice(0, TOP_CONFUSIONS);
  const body =
    shown.length === 0
      ? '<p>No confusions: every example is on the diagonal.</p>'
      : `<ol data-list="top-confusions" data-mode="${escapeHtml(mode)}">${shown
          .map(
            (pair) =>
              `<li>${escapeHtml(pair.expected)} → ${escapeHtml(pair.predicted)}: <strong>${count(pair.value)}</strong> <span class="note">(${percent(pair.share)})</span></li>`,
          )
          .join('')}</ol>`;
  return `<div class="confusion-list">
<h3>Top confusions${total === 0 ? '' : ` <span class="note">(${count(shown.length)} of ${count(total)} pairs; expected → predicted)</span>`}</h3>
${body}
</div>`;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// --- Calibration -------------------------------------------------------------------------------

function calibrationSection(runs: readonly ModeRun[]): string {
  return `<section id="calibration">
<h2>Confidence and calibration</h2>
<p class="note">Each point is a confidence bin: its rows' mean confidence against how many of them were right (alternates count). Points on the diagonal are well calibrated; the bars below count the rows per bin. ECE weighs each bin's gap by its rows. Abstentions (answer <code>none</code>) are left out: they claim no skill.</p>
<div class="figures">
${runs.map((run) => calibrationChart(run.mode, answeredCalibration(run))).join('\n')}
</div>
</section>`;
}

/**
 * Calibration of the answers only: an abstention claims no skill, so its confidence (how sure the
 * model was of a skill it did not choose) is not a prediction to calibrate.
 */
export function answeredCalibration(run: ModeRun): Calibration {
  return computeCalibration(run.rows.filter((row) => row.predicted !== NONE));
}

function calibrationChart(mode: string, calibration: Calibration): string {
  const left = 40;
  const top = 12;
  const plot = 260;
  const countsTop = top + plot + 34;
  const countsHeight = 46;
  const width = left + plot + 16;
  const height = countsTop + countsHeight + 18;
  const xOf = (value: number): number => left + finite(value) * plot;
  const yOf = (value: number): number => top + plot - finite(value) * plot;
  const busiest = Math.max(1, ...calibration.bins.map((bin) => bin.count));
  const filled = calibration.bins.filter((bin) => bin.count > 0);
  const points = filled.map((bin) => {
    const radius = 3 + 5 * Math.sqrt(bin.count / busiest);
    return `<circle class="point" data-count="${bin.count}" cx="${coordinate(xOf(bin.meanConfidence))}" cy="${coordinate(yOf(bin.accuracy))}" r="${coordinate(radius)}" fill="#4c78a8" fill-opacity="0.85"><title>confidence ${fixed(bin.lower, 1)}–${fixed(bin.upper, 1)}: ${count(bin.count)} rows, mean confidence ${fixed(bin.meanConfidence, 3)}, accuracy ${percent(bin.accuracy)}</title></circle>`;
  });
  const line =
    filled.length > 1
      ? `<polyline points="${filled.map((bin) => `${coordinate(xOf(bin.meanConfidence))},${coordinate(yOf(bin.accuracy))}`).join(' ')}" fill="none" stroke="#4c78a8" stroke-width="1.5"/>`
      : '';
  const binWidth = plot / Math.max(calibration.bins.length, 1);
  const bars = calibration.bins.flatMap((bin, position) => {
    if (bin.count === 0) return [];
    const barHeight = Math.max((bin.count / busiest) * countsHeight, 2);
    return [
      `<rect class="bin" data-count="${bin.count}" x="${coordinate(left + position * binWidth + 1)}" y="${coordinate(countsTop + countsHeight - barHeight)}" width="${coordinate(binWidth - 2)}" height="${coordinate(barHeight)}" fill="#9ecae1"><title>confidence ${fixed(bin.lower, 1)}–${fixed(bin.upper, 1)}: ${count(bin.count)} rows</title></rect>`,
    ];
  });
  const ticks = [0, 0.5, 1].map(
    (value) =>
      `<line class="grid" x1="${xOf(value)}" y1="${top}" x2="${xOf(value)}" y2="${top + plot}"/><line class="grid" x1="${left}" y1="${yOf(value)}" x2="${left + plot}" y2="${yOf(value)}"/><text x="${xOf(value)}" y="${top + plot + 14}" text-anchor="middle">${value}</text><text x="${left - 6}" y="${yOf(value) + 4}" text-anchor="end">${value}</text>`,
  );
  const ece = fixed(calibration.ece, 3);
  return `<figure>
<figcaption>${escapeHtml(mode)} <span class="note">ECE <span data-ece="${ece}">${ece}</span></span></figcaption>
<svg id="chart-calibration-${slug(mode)}" data-chart="calibration" data-mode="${escapeHtml(mode)}" data-bins="${filled.length}" role="img" aria-label="Reliability diagram for ${escapeHtml(mode)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
${ticks.join('')}
<rect x="${left}" y="${top}" width="${plot}" height="${plot}" fill="none" class="axis"/>
<line class="diagonal" x1="${xOf(0)}" y1="${yOf(0)}" x2="${xOf(1)}" y2="${yOf(1)}" stroke="#8c959f" stroke-dasharray="4 3"/>
${line}
${points.join('\n')}
<text x="${left + plot / 2}" y="${top + plot + 28}" text-anchor="middle">mean confidence</text>
<text transform="translate(12,${top + plot / 2}) rotate(-90)" text-anchor="middle">accuracy</text>
<text x="${left + 8}" y="${top + 16}">ECE ${ece}</text>
<line class="axis" x1="${left}" y1="${countsTop + countsHeight}" x2="${left + plot}" y2="${countsTop + countsHeight}"/>
<text x="${left - 6}" y="${countsTop + 8}" text-anchor="end">${count(busiest)}</text>
${bars.join('\n')}
<text x="${left + plot / 2}" y="${countsTop + countsHeight + 14}" text-anchor="middle">rows per confidence bin</text>
</svg>
</figure>`;
}

// --- Disagreements -----------------------------------------------------------------------------

function disagreementsSection(comparison: ModeComparison): string {
  const { disagreements } = comparison;
  const modes = comparison.agreement.modes;
  const total = disagreements.length;
  const heading = `<h2>Disagreements</h2>`;
  if (comparison.modes.length < 2) {
    return `<section id="disagreements">${heading}<p class="note">One mode only: nothing to compare.</p></section>`;
  }
  if (total === 0) {
    return `<section id="disagreements">${heading}<p>The modes agreed on every example.</p></section>`;
  }
  const shown = disagreements.slice(0, MAX_DISAGREEMENTS);
  return `<section id="disagreements">
${heading}
<p data-total="${total}">${total > shown.length ? `The first ${count(shown.length)} of ` : ''}${count(total)} example${total === 1 ? '' : 's'} on which the modes chose different skills (${percent(total / Math.max(comparison.count, 1))} of the dataset).</p>
<table data-table="disagreements">
<thead><tr><th scope="col">#</th><th scope="col">Request</th><th scope="col">Expected</th>${modes
    .map((mode) => `<th scope="col">${escapeHtml(mode)}</th>`)
    .join('')}</tr></thead>
<tbody>
${shown.map(disagreementRow).join('\n')}
</tbody>
</table>
</section>`;
}

function disagreementRow(disagreement: Disagreement): string {
  const alternates =
    disagreement.alternates === undefined || disagreement.alternates.length === 0
      ? ''
      : ` <small>(also ${disagreement.alternates.map(escapeHtml).join(', ')})</small>`;
  const answers = disagreement.answers.map(
    (answer) =>
      `<td class="${answer.correct ? 'ok' : 'bad'}">${answer.correct ? '✓' : '✗'} ${escapeHtml(answer.skill)} <small>${fixed(answer.confidence, 2)} · ${escapeHtml(answer.method)}</small></td>`,
  );
  return `<tr><td>${disagreement.index + 1}</td><td class="text">${escapeHtml(disagreement.text)}</td><td class="text">${escapeHtml(disagreement.expected)}${alternates}</td>${answers.join('')}</tr>`;
}

// --- Formatting --------------------------------------------------------------------------------

/** Escapes text for HTML content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] ?? character);
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** A mode name as an id fragment; modes are known words, but ids must never carry markup. */
function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}

function shorten(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** Figures from a misbehaving tier must not print NaN or Infinity into the page. */
function finite(value: number): number {
  return Number.isFinite(value) ? value : 0;
}

/** An SVG coordinate with at most one decimal: enough for the screen, and it keeps the file small. */
function coordinate(value: number): string {
  return String(Math.round(finite(value) * 10) / 10);
}

function cell(text: string): string {
  return `<td>${text}</td>`;
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

function percent(value: number): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(1)}%` : '–';
}

function count(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

function dollars(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value === 0) return '$0';
  if (value < 0.0001) return '< $0.0001';
  return value < 0.01 ? `$${value.toPrecision(2)}` : `$${value.toFixed(2)}`;
}

function milliseconds(value: number): string {
  return Number.isFinite(value) ? duration(value) : '–';
}

/** A duration in milliseconds in the unit that reads best, from microseconds to seconds. */
function duration(value: number): string {
  const milliseconds = finite(value);
  if (milliseconds >= 1000) return `${trim(milliseconds / 1000)} s`;
  if (milliseconds >= 1 || milliseconds === 0) return `${trim(milliseconds)} ms`;
  return `${trim(milliseconds * 1000)} µs`;
}

/** Three significant figures without trailing zeros: 1.50 → 1.5, 100 → 100. */
function trim(value: number): string {
  return String(Number(value.toPrecision(3)));
}
