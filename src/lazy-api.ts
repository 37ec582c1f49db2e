// Entry points of the public API whose modules are heavy for a program that does not use them: each
// is imported on its first call, so that `import { createRouter } from 'switchboard'` stays cheap.
import type { Simulator, SimulatorOptions } from './sim/server.js';

/** Starts the LLM API simulator: Anthropic Messages, Gemini generateContent, OpenAI chat completions. */
export async function startSimulator(options?: SimulatorOptions): Promise<Simulator> {
  const simulator = await import('./sim/server.js');
  return simulator.startSimulator(options);
}
