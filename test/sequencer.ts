import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (a minute or more of a 2-core machine, measured with
 * `SWITCHBOARD_TEST_WORKERS=1 npx vitest run FILE`), longest first, each in both projects it runs in.
 * Without a record of earlier runs, which a fresh clone (CI) lacks, Vitest orders files by size, and
 * these small-but-slow files came last: one of them then ran alone while the other cores waited.
 */
const LONGEST_FIRST = [
  'test/cli-agent-lifecycle.test.ts',
  'test/workers-cluster.test.ts',
  'test/workers-git.test.ts',
  'test/workflows-engine-crash-writes.test.ts',
  'src/providers/claude-code/claude-code-provider.test.ts',
  'test/exit-codes.test.ts',
  'test/cli-call.test.ts',
  'test/workers-recovery.test.ts',
  'test/github-agent.test.ts',
  'test/workers-members.test.ts',
  'src/agents/claude-agent.test.ts',
  'test/cli-agent.test.ts',
  'test/workers-workflows.test.ts',
  'test/workers-agents.test.ts',
];

/** Vitest's own order (failed first, then longest by the last run, else largest), the files above first. */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const index = LONGEST_FIRST.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    return sorted
      .map((spec, position) => ({ spec, position, rank: rank(spec) }))
      .sort((a, b) => a.rank - b.rank || a.position - b.position)
      .map(({ spec }) => spec);
  }
}
