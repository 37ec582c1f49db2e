import { relative } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import { NONE } from '../core/route-types.js';
import type { PrimeEstimate, PrimeOutcome, PrimePlan } from '../route/prime/prime.js';
import { resolveConfig, type GlobalFlags } from './shared.js';

interface PrimeFlags {
  skills?: string;
  provider?: string;
  perSkill?: number;
  nearMiss?: number;
  dryRun?: boolean;
  yes?: boolean;
  json?: boolean;
}

/**
 * `switchboard route prime`: a subcommand of `route`, so `switchboard route "some text"` is unchanged;
 * only the bare word `prime` as the first argument means this command (to route that word, pass it on
 * standard input).
 */
export function registerRoutePrimeCommand(route: Command): void {
  route
    .command('prime')
    .description(
      'have an LLM write example requests for each skill, and near misses, into <skills>/.switchboard-examples.jsonl (once per skill version)',
    )
    .option('--skills <dir>', 'skills folder (default route.skills)')
    .option(
      '--provider <spec>',
      'the LLM that writes them: provider:model, a fallback chain or a role (default route.provider)',
    )
    .option('--per-skill <n>', 'requests asked for each skill (25)', count(1))
    .option(
      '--near-miss <n>',
      'requests that fit no skill, taught as none (default: as many as --per-skill; 0 for none)',
      count(0),
    )
    .option('--dry-run', 'print the prompt and the cost estimate; send nothing, write nothing')
    .option('--yes', 'ask the LLM without confirming (needed when standard input is not a terminal)')
    .option('--json', 'print the outcome as JSON')
    .action(async (_flags: PrimeFlags, command: Command) => {
      const flags = command.optsWithGlobals<PrimeFlags & GlobalFlags>();
      const config = resolveConfig(flags, {
        ...(flags.skills === undefined ? {} : { skills: flags.skills }),
        ...(flags.provider === undefined ? {} : { provider: flags.provider }),
      });
      await prime(config, flags);
    });
}

function count(minimum: number): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || number < minimum || number > 200) {
      throw new InvalidArgumentError(`expected a whole number from ${minimum} to 200`);
    }
    return number;
  };
}

async function prime(config: SwitchboardConfig, flags: PrimeFlags): Promise<void> {
  const directory = config.route.skills;
  if (directory === undefined) {
    throw new SwitchboardError('INVALID_INPUT', 'route prime needs a skills folder', {
      hint: 'pass --skills DIR, or set route.skills in switchboard.yaml',
    });
  }
  const { planPrime, estimatePrime, runPrime } = await import('../route/prime/prime.js');
  const plan = planPrime({
    skills: directory,
    ...(flags.perSkill === undefined ? {} : { perSkill: flags.perSkill }),
    ...(flags.nearMiss === undefined ? {} : { nearMisses: flags.nearMiss }),
  });
  const spec = providerOf(config, plan, flags);
  const provider =
    spec === undefined ? undefined : (await import('./call-setup.js')).resolveRole(spec, config.call.roles);
  const estimate = provider === undefined ? undefined : estimatePrime(plan, provider, config.call.prices);
  const say = (line: string) => {
    if (flags.json !== true) process.stdout.write(`${line}\n`);
  };
  say(planSummary(plan));
  if (plan.request !== undefined) say(estimateLine(plan, estimate));
  if (flags.dryRun === true) {
    const { system, prompt, schema } = plan.request ?? {};
    if (flags.json === true) {
      process.stdout.write(
        `${JSON.stringify({ dryRun: true, file: plan.file, estimate, system, prompt, schema })}\n`,
      );
    } else if (plan.request !== undefined) {
      say(
        `\n--- system ---\n${system}\n--- prompt ---\n${prompt}\n--- schema ---\n${JSON.stringify(schema)}`,
      );
      say('\n(dry run: nothing was sent or written)');
    }
    return;
  }
  let outcome: PrimeOutcome;
  if (plan.request === undefined || provider === undefined) {
    // Nothing to ask; rows of skills that are gone may still leave the file.
    outcome = await runPrime(plan, { provider: '', call: nothingToAsk });
  } else {
    await confirm(estimate, flags);
    outcome = await askAndWrite(config, plan, provider);
  }
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ ...outcome, estimate })}\n`);
  else {
    const summary = outcomeSummary(plan, outcome);
    if (summary !== '') say(summary);
  }
}

/** The LLM to ask: --provider or route.provider; needed only when there is something to ask. */
function providerOf(config: SwitchboardConfig, plan: PrimePlan, flags: PrimeFlags): string | undefined {
  const spec = config.route.provider;
  if (spec === undefined) {
    if (plan.request === undefined || flags.dryRun === true) return undefined;
    throw new SwitchboardError('CONFIG_INVALID', 'route prime needs an LLM to write the examples', {
      hint: 'pass --provider (e.g. claude:haiku) or set route.provider in switchboard.yaml',
    });
  }
  return spec;
}

const nothingToAsk = (): never => {
  throw new SwitchboardError('INTERNAL', 'route prime asked the LLM with nothing to ask');
};

/** One call through `call()`, with the config's registry, retries, budgets and ledger. */
async function askAndWrite(
  config: SwitchboardConfig,
  plan: PrimePlan,
  provider: string,
): Promise<PrimeOutcome> {
  const { runPrime } = await import('../route/prime/prime.js');
  const { call } = await import('../invoke/call.js');
  const { providerRegistry, configCallOptions } = await import('./call-setup.js');
  const providers = providerRegistry(config);
  const ledger = config.ledger.enabled
    ? (await import('../store/ledger.js')).openLedger({ stateDir: config.stateDir })
    : undefined;
  try {
    return await runPrime(plan, {
      provider,
      call,
      callOptions: { ...configCallOptions(config), providers, ledger: ledger ?? false },
    });
  } finally {
    await providers.close();
    await ledger?.close();
  }
}

/** Spending needs a yes: --yes, or an answer on a terminal. */
async function confirm(estimate: PrimeEstimate | undefined, flags: PrimeFlags): Promise<void> {
  if (flags.yes === true) return;
  const cost = estimate?.costUsd === undefined ? 'an unknown cost' : `about ${usd(estimate.costUsd)}`;
  if (process.stdin.isTTY !== true || flags.json === true) {
    throw new SwitchboardError('INVALID_INPUT', `route prime would ask the LLM at ${cost}`, {
      hint: 'pass --yes to go ahead, or --dry-run to see the prompt',
    });
  }
  const { createInterface } = await import('node:readline/promises');
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await prompt.question(`ask the LLM at ${cost}? [y/N] `);
  prompt.close();
  if (!/^y(es)?$/i.test(answer.trim())) {
    throw new SwitchboardError('INVALID_INPUT', 'route prime cancelled; nothing was sent', {
      hint: 'pass --yes to go ahead without asking',
    });
  }
}

function shown(file: string): string {
  const path = relative(process.cwd(), file);
  return path === '' || path.startsWith('..') ? file : path;
}

function planSummary(plan: PrimePlan): string {
  const fresh = plan.toPrime.filter((skill) => !plan.edited.includes(skill.name)).map((skill) => skill.name);
  const parts: string[] = [];
  if (fresh.length > 0) parts.push(`${fresh.length} without examples (${fresh.join(', ')})`);
  if (plan.edited.length > 0)
    parts.push(`${plan.edited.length} edited since primed (${plan.edited.join(', ')})`);
  const upToDate = plan.skills.length - plan.toPrime.length;
  if (upToDate > 0) parts.push(`${upToDate} up to date`);
  const head = `${shown(plan.file)}: ${plan.skills.length} skill(s): ${parts.join(', ')}`;
  if (plan.request === undefined) {
    return `${head}\nnothing to prime: the examples file has rows for every skill as it is now`;
  }
  return head;
}

function estimateLine(plan: PrimePlan, estimate: PrimeEstimate | undefined): string {
  const asked = [
    ...(plan.toPrime.length === 0
      ? []
      : [`${plan.perSkill} requests for each of ${plan.toPrime.length} skill(s)`]),
    ...(plan.nearMisses === 0 ? [] : [`${plan.nearMisses} near misses`]),
  ].join(' and ');
  if (estimate === undefined) return `would ask for ${asked} (no provider given: cost unknown)`;
  const tokens = `≈${estimate.inputTokens} prompt and ≈${estimate.outputTokens} answer tokens`;
  const cost =
    estimate.costUsd === undefined
      ? `cost unknown: no price for ${estimate.spec} (add one under prices: in switchboard.yaml)`
      : `about ${usd(estimate.costUsd)} at list price`;
  return `asking ${estimate.spec} once for ${asked}: ${tokens}, ${cost}`;
}

function outcomeSummary(plan: PrimePlan, outcome: PrimeOutcome): string {
  if (plan.request === undefined) {
    return outcome.dropped > 0
      ? `dropped ${outcome.dropped} row(s) of skills no longer there → ${shown(outcome.file)}`
      : '';
  }
  const skills = Object.entries(outcome.written).filter(([skill]) => skill !== NONE);
  const examples = skills.reduce((total, [, written]) => total + written, 0);
  const nearMisses = outcome.written[NONE] ?? 0;
  const cost =
    outcome.costUsd === null ? 'cost unknown (no price for the model)' : `cost ${usd(outcome.costUsd)}`;
  return [
    `wrote ${examples} example(s) for ${skills.length} skill(s)${nearMisses > 0 ? ` and ${nearMisses} near misses` : ''} → ${shown(outcome.file)} (${outcome.rows} rows; review them, delete bad ones, commit the file)`,
    `${cost} (${outcome.provider ?? 'the LLM'}), recorded in the ledger: switchboard stats`,
  ].join('\n');
}

function usd(value: number): string {
  return `$${value < 0.01 ? value.toFixed(4) : value.toFixed(2)}`;
}
