import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallOptions } from '../../src/invoke/call.js';
import { createOpenAiProvider } from '../../src/providers/openai/openai-provider.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Scenario } from '../../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../../src/sim/server.js';
import { openLedger, type Ledger } from '../../src/store/ledger.js';

/**
 * The real `openai` SDK over HTTP to a `switchboard sim` running `scenario`, with a real SQLite ledger in
 * a temporary folder: the costs `call()` records are the ones a user's calls would. Everything it starts
 * is closed by the functions it pushes onto `cleanups`.
 */
export async function openAiAgainstSimulator(
  scenario: Scenario,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ sim: Simulator; ledger: Ledger; options: CallOptions }> {
  const sim = await startSimulator({ scenario, maxLifetimeMs: 60_000 });
  const providers = new ProviderRegistry();
  providers.register(createOpenAiProvider({ baseUrl: sim.openAiBaseUrl, apiKey: 'sk-test-budget-key-0001' }));
  const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-budget-')) });
  cleanups.push(
    () => sim.close(),
    () => providers.close(),
    () => ledger.close(),
  );
  return { sim, ledger, options: { providers, ledger, retry: { retriesPerProvider: 0 } } };
}

/** The chat completion requests the simulator received. */
export const completions = (sim: Simulator) =>
  sim.requests.filter((entry) => entry.path.endsWith('/chat/completions'));

/** 00:00 UTC today, in epoch milliseconds: where daily spend starts. */
export const startOfToday = () => new Date(new Date().toISOString().slice(0, 10)).getTime();
