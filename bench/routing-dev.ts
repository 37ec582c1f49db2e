// The small routing dev sets through the router at its default thresholds (skills with a name and a
// one-sentence description, no examples). Run from the repository root under Node >= 22:
//   node --experimental-strip-types --no-warnings bench/routing-dev.ts [--verbose]
// Reads ../shared/fixtures/skills/<set> and ../shared/data/routing/<set>.dev.jsonl; skips when absent.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedDirectory } from './source-hooks.ts';

const { createRouter } = await import('../src/route/router.js');
const { evaluateRouter } = await import('../src/route/evaluate.js');
const { loadDataset } = await import('../src/route/datasets.js');
const { DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MARGIN_THRESHOLD } = await import('../src/core/config.js');

const dataDirectory = join(sharedDirectory, 'data/routing');
console.log(`reads ${dataDirectory} and ${join(sharedDirectory, 'fixtures/skills')}`);
if (!existsSync(dataDirectory)) {
  console.log('skipped: ../shared/data/routing not found');
  process.exit(0);
}
const verbose = process.argv.includes('--verbose');
console.log(
  `default thresholds: confidence ${DEFAULT_CONFIDENCE_THRESHOLD}, margin ${DEFAULT_MARGIN_THRESHOLD}`,
);
const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-dev-'));
let correct = 0;
let total = 0;
for (const file of readdirSync(dataDirectory)
  .filter((name) => name.endsWith('.dev.jsonl'))
  .sort()) {
  const name = file.replace('.dev.jsonl', '');
  const skills = join(sharedDirectory, 'fixtures/skills', name);
  if (!existsSync(skills)) continue;
  const examples = loadDataset(join(dataDirectory, file));
  const router = createRouter({ skills, ledger: false, cache: false, stateDir });
  const { metrics, rows } = await evaluateRouter(router, examples);
  await router.close();
  const outOfScope = rows.filter((row) => row.expected === 'none');
  const inScope = rows.filter((row) => row.expected !== 'none');
  const inScopeRight = inScope.filter(
    (row) => row.predicted === row.expected || row.alternates?.includes(row.predicted),
  ).length;
  console.log(
    `${name}: ${router.skills.length} skills, ${rows.length} rows; accuracy ${(metrics.accuracyWithAlternates * 100).toFixed(1)}%` +
      ` counting alternates (${(metrics.accuracy * 100).toFixed(1)}% strict); in-scope ${inScopeRight}/${inScope.length};` +
      ` none rows abstained ${outOfScope.filter((row) => row.predicted === 'none').length}/${outOfScope.length};` +
      ` in-scope rows abstained ${inScope.filter((row) => row.predicted === 'none').length}; macro-F1 ${metrics.macroF1.toFixed(2)}`,
  );
  if (verbose) {
    rows.forEach((row, index) => {
      const ok = row.predicted === row.expected || row.alternates?.includes(row.predicted);
      console.log(
        `  ${ok ? 'ok ' : 'BAD'} ${row.expected} <- ${row.predicted} (${row.confidence.toFixed(2)})  ${examples[index]?.text}`,
      );
    });
  }
  correct += rows.filter(
    (row) => row.predicted === row.expected || row.alternates?.includes(row.predicted),
  ).length;
  total += rows.length;
}
rmSync(stateDir, { recursive: true, force: true });
console.log(`overall: ${correct}/${total} (${((100 * correct) / total).toFixed(1)}%) counting alternates`);
