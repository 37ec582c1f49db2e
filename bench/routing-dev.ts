// The small routing dev sets through the router at its default thresholds (skills with a name and a
// one-sentence description, no examples), this tree's model beside a baseline revision's in one run.
// Run from the repository root under Node >= 22:
//   node --experimental-strip-types --no-warnings bench/routing-dev.ts [--verbose] [--baseline REV | --no-baseline]
// Reads ../shared/fixtures/skills/<set> and ../shared/data/routing/<set>.dev.jsonl; skips when absent.
// Also routes the held-out paraphrase probes of src/route/model/__fixtures__/description-probes/<set>.jsonl
// (written apart from the dev sets, to catch a change that only fits the dev rows).
// `--baseline REV` (default: the commit before issue 16's model, see baseline.ts) runs the same
// measurement on that revision's src/ in a child process; `--json` prints this tree's figures as JSON.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedDirectory } from './source-hooks.ts';
import { baselineRevision, runAtRevision } from './baseline.ts';

const { createRouter } = await import('../src/route/router.js');
const { evaluateRouter } = await import('../src/route/evaluate.js');
const { loadDataset } = await import('../src/route/datasets.js');
const { DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MARGIN_THRESHOLD } = await import('../src/core/config.js');
const { MODEL_VERSION } = await import('../src/route/model/text-classifier.js');

const dataDirectory = join(sharedDirectory, 'data/routing');
// A baseline run gets this tree's probes (its own revision may have none).
const probesAt = process.argv.indexOf('--probes');
const probeDirectory =
  probesAt >= 0
    ? (process.argv[probesAt + 1] as string)
    : fileURLToPath(new URL('../src/route/model/__fixtures__/description-probes/', import.meta.url));
const json = process.argv.includes('--json');
const verbose = process.argv.includes('--verbose');

/** One set's figures: dev rows and probe rows, in scope and `none`. */
interface SetResult {
  name: string;
  skills: number;
  rows: number;
  inScopeRight: number;
  inScope: number;
  noneRefused: number;
  none: number;
  inScopeAbstained: number;
  probesRight: number;
  probesInScope: number;
  probesNoneRefused: number;
  probesNone: number;
  /** One line per dev row (ok/BAD, expected, predicted, confidence, text), for --verbose. */
  lines: string[];
}

interface Measurement {
  modelVersion: string;
  thresholds: string;
  sets: SetResult[];
}

async function measure(): Promise<Measurement> {
  const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-dev-'));
  const sets: SetResult[] = [];
  for (const file of readdirSync(dataDirectory)
    .filter((name) => name.endsWith('.dev.jsonl'))
    .sort()) {
    const name = file.replace('.dev.jsonl', '');
    const skills = join(sharedDirectory, 'fixtures/skills', name);
    if (!existsSync(skills)) continue;
    const router = createRouter({ skills, ledger: false, cache: false, stateDir });
    const score = async (examples: ReturnType<typeof loadDataset>) => {
      const { rows } = await evaluateRouter(router, examples);
      const right = (row: (typeof rows)[number]): boolean =>
        row.predicted === row.expected || row.alternates?.includes(row.predicted) === true;
      const inScope = rows.filter((row) => row.expected !== 'none');
      const none = rows.filter((row) => row.expected === 'none');
      return {
        rows,
        right,
        inScopeRight: inScope.filter(right).length,
        inScope: inScope.length,
        noneRefused: none.filter((row) => row.predicted === 'none').length,
        none: none.length,
        inScopeAbstained: inScope.filter((row) => row.predicted === 'none').length,
      };
    };
    const examples = loadDataset(join(dataDirectory, file));
    const dev = await score(examples);
    const probeFile = join(probeDirectory, `${name}.jsonl`);
    const probes = existsSync(probeFile) ? await score(loadDataset(probeFile)) : undefined;
    await router.close();
    sets.push({
      name,
      skills: router.skills.length,
      rows: dev.rows.length,
      inScopeRight: dev.inScopeRight,
      inScope: dev.inScope,
      noneRefused: dev.noneRefused,
      none: dev.none,
      inScopeAbstained: dev.inScopeAbstained,
      probesRight: probes?.inScopeRight ?? 0,
      probesInScope: probes?.inScope ?? 0,
      probesNoneRefused: probes?.noneRefused ?? 0,
      probesNone: probes?.none ?? 0,
      lines: dev.rows.map(
        (row, index) =>
          `  ${dev.right(row) ? 'ok ' : 'BAD'} ${row.expected} <- ${row.predicted} (${row.confidence.toFixed(2)})  ${examples[index]?.text}`,
      ),
    });
  }
  rmSync(stateDir, { recursive: true, force: true });
  return {
    modelVersion: MODEL_VERSION,
    thresholds: `confidence ${DEFAULT_CONFIDENCE_THRESHOLD}, margin ${DEFAULT_MARGIN_THRESHOLD}`,
    sets,
  };
}

if (!existsSync(dataDirectory)) {
  console.log(`skipped: ${dataDirectory} not found`);
  process.exit(0);
}
if (json) {
  console.log(JSON.stringify(await measure()));
  process.exit(0);
}
console.log(`reads ${dataDirectory} and ${join(sharedDirectory, 'fixtures/skills')}`);
const revision = baselineRevision(process.argv);
const baseline =
  revision === undefined
    ? undefined
    : runAtRevision<Measurement>(revision, 'routing-dev.ts', ['--probes', probeDirectory]);
const ours = await measure();

const fraction = (right: number, total: number): string =>
  total === 0 ? '    -' : `${right}/${total} (${((100 * right) / total).toFixed(1)}%)`;
const line = (label: string, result: SetResult): string =>
  `  ${label.padEnd(34)} in-scope ${fraction(result.inScopeRight, result.inScope).padEnd(13)}` +
  ` none refused ${fraction(result.noneRefused, result.none).padEnd(13)}` +
  ` | probes in-scope ${fraction(result.probesRight, result.probesInScope).padEnd(14)}` +
  ` none refused ${fraction(result.probesNoneRefused, result.probesNone)}`;
console.log(`description-only skills, default thresholds (${ours.thresholds}); alternates count as right`);
for (const result of ours.sets) {
  console.log(`${result.name}: ${result.skills} skills, ${result.rows} dev rows`);
  if (typeof baseline === 'object') {
    const before = baseline.sets.find((set) => set.name === result.name);
    if (before !== undefined) console.log(line(`baseline ${revision} (${baseline.modelVersion})`, before));
  }
  console.log(line(`this tree (${ours.modelVersion})`, result));
  if (verbose) for (const text of result.lines) console.log(text);
}
if (typeof baseline === 'string') console.log(baseline);
