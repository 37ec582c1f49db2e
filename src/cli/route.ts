import { Option, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import { NONE, type RouteDecision } from '../core/route-types.js';
import { PRINTABLE, printDecision, type Printable } from './route-output.js';
import type { RouterOptions } from '../route/router.js';
import {
  addRoutingFlags,
  parseFraction,
  requireRoutes,
  resolveConfig,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';
import { createProgress, trainingProgress } from './progress.js';
import { askServer, clientStateDir, serverAddress } from './server-client.js';
import { registerRoutePrimeCommand } from './route-prime.js';
import { textFromArguments } from './stdin.js';

export function registerRouteCommand(program: Command): void {
  const route = addRoutingFlags(
    program
      .command('route')
      .description('route a request to a skill (exit 0 routed, 10 abstained)')
      .argument(
        '[text...]',
        'the request (omit or "-" for standard input); or `learn`, `prime`, or `feedback <decision-id> <skill>`',
      )
      .option('--json', 'print the RouteDecision as JSON')
      .addOption(
        new Option(
          '--print <field>',
          'print only the skill (none when it abstained), the confidence or the method',
        )
          .choices(PRINTABLE)
          .conflicts('json'),
      )
      .option(
        '--server <url>',
        'route on a running `switchboard serve` (env SWITCHBOARD_SERVER); runs in process when it does not answer',
      )
      .option(
        '--min-confidence <p>',
        'learn: LLM decisions at least this confident teach the model (0.8)',
        parseFraction,
      ),
  ).action(async (words: string[], flags: RouteFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalFlags>();
    if (words[0] === 'feedback') {
      const config = resolveConfig(globals, flags);
      requireRoutes(config);
      await feedback(config, words.slice(1));
      return;
    }
    if (words.length === 1 && words[0] === 'learn') {
      const config = resolveConfig(globals, flags);
      requireRoutes(config);
      await learn(config, await routerOptions(config), flags);
      return;
    }
    const server = serverAddress(flags.server);
    if (server !== undefined) {
      const text = await textFromArguments(words, 'request');
      const decision = await askServer(
        server,
        '/route',
        { text },
        { stateDir: clientStateDir(globals.stateDir) },
      );
      if (decision !== undefined) return printDecision(decision as RouteDecision, flags);
      const config = resolveConfig(globals, flags);
      requireRoutes(config);
      return routeInProcess(text, config, globals, flags);
    }
    await routeHere(await textFromArguments(words, 'request'), globals, flags);
  });
  registerRoutePrimeCommand(route);
}

/** Routes `text` in this process with the command's flags (the quick path's way back when no server answered). */
export async function routeHere(text: string, globals: GlobalFlags, flags: RouteFlags): Promise<void> {
  const config = resolveConfig(globals, flags);
  requireRoutes(config);
  await routeInProcess(text, config, globals, flags);
}

async function routeInProcess(
  text: string,
  config: SwitchboardConfig,
  globals: GlobalFlags,
  flags: RouteFlags,
): Promise<void> {
  const { createRouter } = await import('../route/router.js');
  // A first route may train the model (seconds on a large training set): show it on a terminal.
  const progress = await createProgress(globals.quiet);
  const router = createRouter({
    ...(await routerOptions(config)),
    onTrainProgress: trainingProgress(progress),
  });
  progress.stop();
  try {
    warnSkippedSkills(router);
    const decision = await router.route(text);
    decision.warnings.push(...router.problems.map((problem) => `${problem.file}: ${problem.reason}`));
    printDecision(decision, flags);
  } finally {
    await router.close();
  }
}

export interface RouteFlags extends RoutingFlags {
  minConfidence?: number;
  print?: Printable;
  server?: string;
}

/**
 * `route feedback ID SKILL`: records a correction. Anything else after `feedback` is a mistake to
 * report, not a request to route; a request that starts with the word goes on standard input.
 */
async function feedback(config: SwitchboardConfig, words: string[]): Promise<void> {
  if (words.length !== 2) {
    throw new SwitchboardError('INVALID_INPUT', 'route feedback needs a decision id and a skill', {
      hint: 'switchboard route feedback ID SKILL; to route a request starting with "feedback", pass it on standard input',
    });
  }
  const [id, skill] = words as [string, string];
  const { createRouter } = await import('../route/router.js');
  // The skill set only: no model to train, nothing to record.
  const router = createRouter({
    ...(await routerOptions(config)),
    mode: 'rules-only',
    cache: false,
    ledger: false,
    learned: false,
  });
  const known = [...router.skills.map((entry) => entry.name), NONE];
  await router.close();
  if (!known.includes(skill)) {
    throw new SwitchboardError('INVALID_INPUT', `unknown skill "${skill}"`, {
      hint: `use one of: ${known.join(', ')}`,
      details: { skills: known },
    });
  }
  const { openLedger } = await import('../store/ledger.js');
  const ledger = openLedger({ stateDir: config.stateDir });
  try {
    await ledger.recordFeedback(id, skill);
  } finally {
    await ledger.close();
  }
  process.stdout.write(
    `recorded: decision ${id} should have gone to ${skill}; run \`switchboard route learn\`\n`,
  );
}

/** `route learn`: ledger → learned examples → retrained model; shows the LLM share before and after. */
async function learn(config: SwitchboardConfig, options: RouterOptions, flags: RouteFlags): Promise<void> {
  const { createRouter } = await import('../route/router.js');
  const { openLedger } = await import('../store/ledger.js');
  const { collectLearnedExamples, writeLearnedExamples } = await import('../route/learn.js');
  const { escalationShare } = await import('../route/evaluate.js');
  const ledger = openLedger({ stateDir: config.stateDir });
  let collected;
  try {
    collected = await collectLearnedExamples(
      ledger,
      flags.minConfidence === undefined ? {} : { minConfidence: flags.minConfidence },
    );
  } finally {
    await ledger.close();
  }
  if (collected.examples.length === 0) {
    const why =
      collected.withoutText > 0
        ? `${collected.withoutText} decision(s) could teach but their text was not stored`
        : 'no confident LLM decisions or corrections yet';
    throw new SwitchboardError('INVALID_INPUT', `nothing to learn: ${why}`, {
      hint: 'route in hybrid mode with ledger.store_text: true (or --store-text), or correct decisions with `route feedback`',
    });
  }
  // The share of these requests the local tiers leave to the LLM, before and after learning.
  const local = { ...options, mode: 'local' as const, cache: false as const, ledger: false as const };
  const needsLlm = async (learned: boolean): Promise<number> => {
    const router = createRouter({ ...local, learned });
    const thresholds = {
      confidenceThreshold: config.route.confidenceThreshold,
      marginThreshold: config.route.marginThreshold,
      skills: router.skillThresholds,
    };
    const share = escalationShare(
      collected.examples.map((example) => router.rank(example.text).candidates),
      thresholds,
    );
    await router.close();
    return share;
  };
  const before = await needsLlm(false);
  const file = writeLearnedExamples(config.stateDir, collected.examples);
  const after = await needsLlm(true);
  const percent = (value: number) => `${(value * 100).toFixed(0)}%`;
  process.stdout.write(
    [
      `learned ${collected.examples.length} example(s): ${collected.fromLlm} from LLM decisions, ${collected.fromFeedback} from corrections → ${file}`,
      `requests among them the local tiers leave to the LLM: ${percent(before)} before, ${percent(after)} after`,
      ...(collected.withoutText > 0
        ? [`skipped ${collected.withoutText} decision(s) without stored text`]
        : []),
    ].join('\n') + '\n',
  );
}

export { formatDecision } from './route-output.js';
