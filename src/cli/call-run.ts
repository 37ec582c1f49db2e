import { readBoundedFile, syntaxErrorWithoutContent } from '../core/bounded-file.js';
import type { CallResult, JsonSchema, ReasoningEffort } from '../core/call-types.js';
import type { ConfigOverrides } from '../core/config.js';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import type { CallBody } from '../serve/call-body.js';
import type { Ledger } from '../store/ledger.js';
import { printCallResult } from './call-output.js';
import { askServer, clientStateDir, serverAddress } from './server-client.js';
import { textFromArguments } from './stdin.js';

// What `switchboard call` does once its arguments are parsed, whichever parser read them: commander
// (call.ts) or the fast path of a plain call (call-fast-path.ts). No commander here, and the library
// loads only when the call runs in process, so a call sent to a server starts in a few modules.

/** `switchboard call`'s options as commander hands them over. */
export interface CallFlags {
  stream?: boolean;
  tag: Record<string, string>;
  schemaRetries?: number;
  maxCost?: number;
  system?: string;
  reasoning?: ReasoningEffort;
  schema?: string;
  json?: boolean;
  timeout?: number;
  stageTimeout?: number;
  idleTimeout?: number;
  resume?: string;
  keepSession?: boolean;
  allowedTools?: string;
  cwd?: string;
  claudePath?: string;
  baseUrl?: string;
  storeText?: boolean;
  ledger?: boolean;
  ignoreCooldown?: boolean;
  print?: 'text';
  server?: string;
}

/** The global options `call` reads when it runs in process. */
export interface CallGlobals {
  config?: string;
  stateDir?: string;
  quiet?: boolean;
}

/** Runs `switchboard call SPEC WORDS…`: on the server when one is set and answers, else in process. */
export async function runCall(
  spec: string,
  words: readonly string[],
  flags: CallFlags,
  globals: () => CallGlobals,
): Promise<void> {
  const prompt = await textFromArguments(words, 'prompt');
  const schema = flags.schema === undefined ? undefined : readSchema(flags.schema);
  const body = callBody(spec, prompt, schema, flags);
  const server = serverAddress(flags.server);
  if (server !== undefined) {
    const reasons = inProcessOnly(flags);
    if (reasons.length === 0) {
      const answer = await askServer(server, '/call', body, { stateDir: clientStateDir(globals().stateDir) });
      if (answer !== undefined) {
        printCallResult(answer as CallResult, { json: flags.json === true, streamed: false });
        return;
      }
    } else if (flags.server !== undefined) {
      const verb = reasons.length === 1 ? 'needs' : 'need';
      process.stderr.write(
        `switchboard: warning: ${reasons.join(', ')} ${verb} this process: running in process, not on the server\n`,
      );
    }
  } else if (inProcessOnly(flags).length === 0) {
    const answer = await viaBackgroundServer(body, globals());
    if (answer !== undefined) {
      printCallResult(answer, { json: flags.json === true, streamed: false });
      return;
    }
  }
  await callInProcess(body, flags, globals());
}

/**
 * The call on the background server of this call's settings (cli/background-serve.ts), or undefined
 * after starting it for the next call when there is none: this one then runs in process.
 */
async function viaBackgroundServer(body: CallBody, globals: CallGlobals): Promise<CallResult | undefined> {
  const background = await import('./background-serve.js');
  if (!background.backgroundServeEnabled()) return undefined;
  const { resolve } = await import('node:path');
  const cwd = process.cwd();
  const stateDir = clientStateDir(globals.stateDir);
  const settings = {
    stateDir,
    cwd,
    configFile: globals.config === undefined ? undefined : resolve(cwd, globals.config),
    // A longer call than serve's default --max-timeout of 600 s must not be cut on the server.
    serveArgs: ['--max-timeout', String(MAX_CALL_SECONDS)],
    environment: process.env,
  };
  const given = globals.stateDir !== undefined || (process.env['SWITCHBOARD_STATE_DIR'] ?? '').trim() !== '';
  if (!background.stateFolderKnown(settings, given)) return undefined;
  const found = background.findBackgroundServer(settings);
  if (found !== undefined) {
    const answer = await askServer(new URL(found.record.url), '/call', body, { stateDir, quiet: true });
    if (answer !== undefined) {
      if (process.env['SWITCHBOARD_DEBUG'] === '1')
        process.stderr.write(
          `switchboard: called through the background server ${found.record.url} (pid ${found.record.pid})\n`,
        );
      return answer as CallResult;
    }
    background.forgetServer(found);
  }
  const started = background.startBackgroundServe(settings);
  if (process.env['SWITCHBOARD_DEBUG'] === '1')
    process.stderr.write(`switchboard: background server for ${stateDir}: ${started}; calling in process\n`);
  return undefined;
}

/** The background server's --max-timeout: a day, longer than any call's own timeout. */
const MAX_CALL_SECONDS = 86_400;

/** The call as `POST /call` takes it: the flags' explicit values only (the config fills the rest). */
function callBody(spec: string, prompt: string, schema: JsonSchema | undefined, flags: CallFlags): CallBody {
  const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
  const optional: Omit<CallBody, 'spec' | 'prompt'> = {};
  const entries: [keyof typeof optional, unknown][] = [
    ['system', flags.system],
    ['reasoning', flags.reasoning],
    ['schema', schema],
    ['timeoutMs', seconds(flags.timeout)],
    ['stageTimeoutMs', seconds(flags.stageTimeout)],
    ['idleTimeoutMs', seconds(flags.idleTimeout)],
    ['tags', Object.keys(flags.tag).length === 0 ? undefined : flags.tag],
    ['maxCostUsd', flags.maxCost],
    ['schemaRetries', flags.schemaRetries],
    ['ignoreCooldown', flags.ignoreCooldown === true ? true : undefined],
    ['storeText', flags.storeText === true ? true : undefined],
  ];
  for (const [key, value] of entries)
    if (value !== undefined) (optional as Record<string, unknown>)[key] = value;
  return { spec, prompt, ...optional };
}

/** The flags a server cannot honour: they need this process (its terminal, files or own providers). */
function inProcessOnly(flags: CallFlags): string[] {
  const reasons: [boolean, string][] = [
    [flags.stream === true, '--stream'],
    [flags.resume !== undefined, '--resume'],
    [flags.keepSession === true, '--keep-session'],
    [flags.allowedTools !== undefined, '--allowed-tools'],
    [flags.cwd !== undefined, '--cwd'],
    [flags.claudePath !== undefined, '--claude-path'],
    [flags.baseUrl !== undefined, '--base-url'],
    [flags.ledger === false, '--no-ledger'],
  ];
  return reasons.filter(([given]) => given).map(([, flag]) => flag);
}

async function callInProcess(body: CallBody, flags: CallFlags, globals: CallGlobals): Promise<void> {
  const { call } = await import('../invoke/call.js');
  const { openLedger } = await import('../store/ledger.js');
  const { callOptions, callRequest, providerRegistry, resolveRole } = await import('./call-setup.js');
  const { commandConfig } = await import('./shared.js');
  const { createProgress, retryWaitProgress } = await import('./progress.js');
  const overrides: ConfigOverrides = {};
  if (flags.ledger === false) overrides.ledger = false;
  if (flags.storeText === true) overrides.storeText = true;
  const config = commandConfig(globals, overrides);
  const chain = resolveRole(body.spec, config.call.roles);
  const providers = providerRegistry(config, {
    ...(flags.claudePath === undefined ? {} : { executable: flags.claudePath }),
    ...(flags.baseUrl === undefined ? {} : { baseUrl: flags.baseUrl }),
  });
  let streamedAny = false;
  const onText =
    flags.stream === true && flags.json !== true && body.schema === undefined
      ? (delta: string) => {
          streamedAny = true;
          process.stdout.write(delta);
        }
      : undefined;
  const ledger = config.ledger.enabled
    ? openLedger({ stateDir: config.stateDir, storeText: config.ledger.storeText })
    : undefined;
  const progress = await createProgress(globals.quiet);
  let answered: CallResult | undefined;
  try {
    const result = await call(
      chain,
      callRequest(body, onText === undefined ? {} : { onText }),
      callOptions(config, body, {
        providers,
        ledger,
        providerOptions: claudeCallOptions(flags),
        onRetryWait: retryWaitProgress(progress),
      }),
    );
    progress.stop();
    printCallResult(result, { json: flags.json === true, streamed: streamedAny });
    answered = result;
  } finally {
    progress.stop();
    await closeAfterAnswer(ledger, answered);
    await providers.close();
  }
}

/**
 * Closes the ledger, which writes its queued rows. Once an answer is out, rows a full or read-only disk
 * refuses are a warning, not a failure: the call was paid for, and a failed exit would make a script
 * send (and pay for) it again.
 */
async function closeAfterAnswer(ledger: Ledger | undefined, answered: CallResult | undefined): Promise<void> {
  try {
    await ledger?.close();
  } catch (error) {
    if (answered === undefined) throw error;
    const { unrecordedWarning, UNRECORDED_WARNING_START } = await import('../invoke/call.js');
    const warning = unrecordedWarning(error);
    if (warning === undefined) throw error;
    // Said once: the call may have told of the same fault already.
    if (answered.warnings.some((told) => told.startsWith(UNRECORDED_WARNING_START))) return;
    process.stderr.write(`switchboard: warning: ${warning}\n`);
  }
}

/** Per-call Claude Code options (`--resume`, `--keep-session`, `--allowed-tools`, `--cwd`). */
function claudeCallOptions(flags: CallFlags): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  if (flags.resume !== undefined) options['resume'] = flags.resume;
  if (flags.keepSession === true) options['persistSession'] = true;
  if (flags.allowedTools !== undefined)
    options['allowedTools'] = flags.allowedTools
      .split(',')
      .map((tool) => tool.trim())
      .filter(Boolean);
  if (flags.cwd !== undefined) options['cwd'] = flags.cwd;
  return options;
}

function readSchema(file: string): JsonSchema {
  let text: string;
  try {
    text = readBoundedFile(file, { kind: 'schema file' }).toString('utf8');
  } catch (error) {
    if (isSwitchboardError(error)) throw error;
    throw new SwitchboardError('INVALID_INPUT', `schema file ${file} cannot be read`, {
      hint: 'check the --schema path',
    });
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as JsonSchema;
  } catch (error) {
    const problem = error instanceof SyntaxError ? syntaxErrorWithoutContent(error) : 'it is not an object';
    throw new SwitchboardError('INVALID_INPUT', `schema file ${file} is not a JSON object: ${problem}`, {
      hint: 'write a JSON Schema such as {"type": "object", "properties": {...}}',
    });
  }
}
