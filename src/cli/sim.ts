import { InvalidArgumentError, type Command } from 'commander';
import type { SimulatorOptions } from '../sim/server.js';

interface SimFlags {
  scenario?: string;
  port: number;
  host: string;
  log?: string;
  maxLifetime?: number;
  json?: boolean;
}

function parseNonNegativeInteger(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isInteger(number) || number < 0) {
    throw new InvalidArgumentError('expected a whole number ≥ 0');
  }
  return number;
}

function parsePort(value: string): number {
  const port = parseNonNegativeInteger(value);
  if (port > 65_535) throw new InvalidArgumentError('expected a port between 0 and 65535');
  return port;
}

export function registerSimCommand(program: Command): void {
  program
    .command('sim')
    .description('run the LLM API simulator (Anthropic, Gemini, OpenAI wire protocols) for offline tests')
    .option(
      '--scenario <file>',
      'YAML/JSON scenario: ordered rules that match requests and script answers or faults',
    )
    .option('--port <port>', 'port to listen on; 0 picks a free one and prints it', parsePort, 0)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--log <file>', 'append every request as a JSON line to this file')
    .option('--max-lifetime <seconds>', 'stop by itself after this many seconds', parseNonNegativeInteger)
    .option('--json', 'print the address as JSON')
    .action(async (flags: SimFlags) => {
      const { startSimulator } = await import('../sim/server.js');
      const options: SimulatorOptions = { port: flags.port, host: flags.host };
      if (flags.scenario !== undefined) options.scenario = flags.scenario;
      if (flags.log !== undefined) options.logFile = flags.log;
      const simulator = await startSimulator(options);
      process.stdout.write(
        flags.json === true
          ? `${JSON.stringify({ url: simulator.url, port: simulator.port, openAiBaseUrl: simulator.openAiBaseUrl })}\n`
          : `switchboard sim listening on ${simulator.url} (port ${simulator.port})\n`,
      );
      await new Promise<void>((resolve) => {
        let lifetime: NodeJS.Timeout | undefined;
        const stop = () => {
          // A signal must end the command now, not when --max-lifetime runs out.
          clearTimeout(lifetime);
          void simulator.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        // The command's own timer (kept referenced) ends it, so the top-level await always settles.
        if (flags.maxLifetime !== undefined) lifetime = setTimeout(stop, flags.maxLifetime * 1000);
      });
    });
}
