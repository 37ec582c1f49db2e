import type { ModeRun } from '../route/compare.js';
import { wrongRows } from '../route/wrong-rows.js';

/** The misrouted-rows table lists this many rows per mode; the total is always given. */
export const MAX_MISROUTED = 200;

/** Per-skill precision, recall and F1 for each mode: which routes are weak, not just how many. */
export function perSkillSection(runs: readonly ModeRun[], escape: (text: string) => string): string {
  const tables = runs.map((run) => {
    const rows = run.metrics.perSkill.map(
      (skill) =>
        `<tr><th scope="row">${escape(skill.skill)}</th><td>${skill.precision.toFixed(3)}</td><td>${skill.recall.toFixed(3)}</td><td>${skill.f1.toFixed(3)}</td><td>${skill.support}</td><td>${skill.predictedCount}</td></tr>`,
    );
    return `<h3>${escape(run.mode)}</h3>
<table data-table="per-skill" data-mode="${escape(run.mode)}">
<thead><tr><th scope="col">Skill</th><th scope="col">Precision</th><th scope="col">Recall</th><th scope="col">F1</th><th scope="col">Support</th><th scope="col">Predicted</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
  });
  return `<section id="per-skill">
<h2>Per skill</h2>
<p class="note">One-vs-rest for each label (none included); support is the rows expecting it, predicted the rows answered with it. Largest support first.</p>
${tables.join('\n')}
</section>`;
}

/** The rows each mode routed wrongly, for review: request, expected, answer, confidence, tier. */
export function misroutedSection(runs: readonly ModeRun[], escape: (text: string) => string): string {
  const parts = runs.map((run) => {
    const wrong = wrongRows(run.rows);
    const shown = wrong.slice(0, MAX_MISROUTED);
    const rows = shown.map(
      (item) =>
        `<tr><td>${item.row}</td><td class="text">${escape(item.text)}</td><td class="text">${escape([item.expected, ...(item.alternates ?? [])].join(' or '))}</td><td class="bad">${escape(item.predicted)}</td><td>${item.confidence.toFixed(2)}</td><td>${escape(item.error === undefined ? item.method : `error: ${item.error}`)}</td></tr>`,
    );
    const lead = `${wrong.length > shown.length ? `The first ${shown.length} of ` : ''}${wrong.length} row${wrong.length === 1 ? '' : 's'} routed wrongly`;
    return `<h3>${escape(run.mode)}</h3>
<p data-total="${wrong.length}" data-mode="${escape(run.mode)}">${lead}.</p>
${
  rows.length === 0
    ? ''
    : `<table data-table="misrouted" data-mode="${escape(run.mode)}">
<thead><tr><th scope="col">Row</th><th scope="col">Request</th><th scope="col">Expected</th><th scope="col">Predicted</th><th scope="col">Confidence</th><th scope="col">Tier</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`
}`;
  });
  return `<section id="misrouted">
<h2>Misrouted rows</h2>
${parts.join('\n')}
</section>`;
}
