// `fitThresholds` on a large synthetic set: 20,000 rows × 150 labels (CLINC150's size), beside one plain
// pass over the same rows that finds each row's top two scores (the least any threshold search must
// do). Run from the repository root under Node >= 22:
//   node --experimental-strip-types --no-warnings bench/fit.ts [rounds]
// It was a timed unit test; timings belong here, where a loaded machine cannot fail a build.
import type { FitRow } from '../src/route/fit.js';
import './source-hooks.ts';

const { fitThresholds } = await import('../src/route/fit.js');
const { seededRandom } = await import('../src/core/seeded-random.js');

const TARGET_MS = 1_000;
const rounds = Number(process.argv[2] ?? 5);

const random = seededRandom(42);
const labels = Array.from({ length: 150 }, (_, index) => (index === 0 ? 'none' : `skill-${index}`));
const rows: FitRow[] = Array.from({ length: 20_000 }, () => {
  const raw = labels.map((skill) => ({ skill, score: random() ** 4 }));
  const total = raw.reduce((sum, candidate) => sum + candidate.score, 0);
  const scored = raw.map((candidate) => ({ skill: candidate.skill, score: candidate.score / total }));
  scored.sort((x, y) => y.score - x.score);
  return { expected: labels[Math.floor(random() * labels.length)] as string, candidates: scored };
});

/** One pass over every candidate of every row, keeping the top two scores. */
function topTwoPass(): number {
  let checksum = 0;
  for (const row of rows) {
    let top = -1;
    let second = -1;
    for (const { score } of row.candidates) {
      if (score > top) {
        second = top;
        top = score;
      } else if (score > second) second = score;
    }
    checksum += top - second;
  }
  return checksum;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function timed(action: () => unknown): number {
  const started = performance.now();
  action();
  return performance.now() - started;
}

// Interleaved, so both see the same machine load.
const fitTimes: number[] = [];
const passTimes: number[] = [];
let fitted: ReturnType<typeof fitThresholds> | undefined;
for (let round = 0; round < rounds; round++) {
  passTimes.push(timed(topTwoPass));
  fitTimes.push(timed(() => (fitted = fitThresholds(rows))));
}
const fit = median(fitTimes);
const pass = median(passTimes);
console.log(`rows ${rows.length} × ${labels.length} labels, ${rounds} rounds, medians:`);
console.log(
  `fitThresholds ${fit.toFixed(1)} ms (confidence ${fitted?.confidenceThreshold}, margin ${fitted?.marginThreshold})`,
);
console.log(`one top-two pass ${pass.toFixed(1)} ms; fit ×${(fit / pass).toFixed(1)} of it`);
console.log(`${fit <= TARGET_MS ? 'ok' : 'MISSED'}: target fit ≤ ${TARGET_MS} ms`);
