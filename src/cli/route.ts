import type { Command } from 'commander';
import { NONE, type RouteDecision } from '../core/route-types.js';
import {
  addRoutingFlags,
  EXIT_CODES,
  requireRoutes,
  resolveConfig,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';
import { textFromArguments } from './stdin.js';

export function registerRouteCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('route')
      .description('route a request to a skill (exit 0 routed, 10 abstained)')
      .argument('[text...]', 'the request; omit or give "-" to read standard input')
      .option('--json', 'print the RouteDecision as JSON'),
  ).action(async (words: string[], flags: RoutingFlags, command: Command) => {
    const { createRouter } = await import('../route/router.js');
    const globals = command.optsWithGlobals<GlobalFlags>();
    const config = resolveConfig(globals, flags);
    requireRoutes(config);
    const text = await textFromArguments(words, 'request');
    const router = createRouter(await routerOptions(config));
    try {
      warnSkippedSkills(router);
      const decision = await router.route(text);
      decision.warnings.push(...router.problems.map((problem) => `${problem.file}: ${problem.reason}`));
      process.stdout.write(flags.json === true ? `${JSON.stringify(decision)}\n` : formatDecision(decision));
      process.exitCode = decision.skill === NONE ? EXIT_CODES.ABSTAINED : EXIT_CODES.OK;
    } finally {
      router.close();
    }
  });
}

export function formatDecision(decision: RouteDecision): string {
  const head =
    decision.skill === NONE
      ? `none — no skill fits (${decision.method})`
      : `${decision.skill}  confidence ${decision.confidence.toFixed(2)}  via ${decision.method}`;
  const lines = [head, `  reasoning:  ${decision.reasoning}`];
  if (decision.candidates.length > 0) {
    const listed = decision.candidates.map((candidate) => `${candidate.skill} ${candidate.score.toFixed(2)}`);
    lines.push(`  candidates: ${listed.join(' · ')}`);
  }
  const timings = Object.entries(decision.timings).map(([tier, ms]) => `${tier} ${formatMs(ms)}`);
  lines.push(`  time:       ${formatMs(decision.durationMs)} (${timings.join(', ')})`);
  for (const warning of decision.warnings) lines.push(`  warning:    ${warning}`);
  return `${lines.join('\n')}\n`;
}

function formatMs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(1)} ms`;
}
