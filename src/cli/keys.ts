import { InvalidArgumentError, type Command } from 'commander';
import { durationMs } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import { formatUsd } from '../core/format-usd.js';
import type { ListedVirtualKey } from '../keys/key-admin.js';
import type { Ledger } from '../store/ledger.js';
import { tagOf } from './option-values.js';
import { commandConfig, type GlobalFlags } from './shared.js';

interface CreateFlags {
  name: string;
  tag?: [string, string][];
  models?: string[];
  dailyUsd?: number;
  rpm?: number;
  tpm?: number;
  concurrency?: number;
  expires?: number;
  json?: boolean;
}

/** Where the gateway listens by default, for the note on how to use a new key. */
const GATEWAY_URL = 'http://127.0.0.1:8787';

export function registerKeysCommand(program: Command): void {
  const keys = program
    .command('keys')
    .description("virtual keys for the gateway: callers' own keys with limits, in place of the provider's");

  keys
    .command('create')
    .description('make a virtual key and print it once (only its HMAC is stored)')
    .requiredOption('--name <name>', 'unique name of the key, e.g. ci')
    .option('--tag <name=value>', 'tag added to every call made with the key; repeatable', collectTag)
    .option(
      '--models <list>',
      'models it may use, comma-separated, e.g. sonnet,haiku (default: any)',
      modelList,
    )
    .option('--daily-usd <dollars>', 'cap on dollars spent with it per UTC day', number(0, false))
    .option('--rpm <n>', 'requests per minute', number(1, true))
    .option('--tpm <n>', 'tokens per minute', number(1, true))
    .option('--concurrency <n>', 'requests in flight at once', number(1, true))
    .option('--expires <duration>', 'refuse it after 30d, 12h, 90m, … (default: never)', expiry)
    .option('--json', 'print {id, name, key, …} as JSON')
    .action((flags: CreateFlags, command: Command) => withLedger(command, createKey(flags)));

  keys
    .command('list')
    .description(
      'every virtual key: name, id, prefix, tags, models, limits, expiry, revocation (never the key)',
    )
    .option('--json', 'print the keys as a JSON array')
    .action((flags: { json?: boolean }, command: Command) => withLedger(command, listKeys(flags)));

  keys
    .command('revoke')
    .description('refuse a virtual key from now on (a running gateway within its refresh, 2 s)')
    .argument('<name-or-id>', 'the key, by name or id')
    .action((target: string, _flags: unknown, command: Command) => withLedger(command, revokeKey(target)));
}

type LedgerAction = (ledger: Ledger, stateDir: string) => Promise<void>;

/** Runs `action` on the ledger of the command's state folder or database, closed afterwards. */
async function withLedger(command: Command, action: LedgerAction): Promise<void> {
  const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
  const { connectLedger } = await import('../store/ledger.js');
  const ledger = await connectLedger({ stateDir: config.stateDir });
  try {
    await action(ledger, config.stateDir);
  } finally {
    await ledger.close();
  }
}

function createKey(flags: CreateFlags): LedgerAction {
  return async (ledger, stateDir) => {
    const { loadKeySecret } = await import('../keys/key-secret.js');
    const { issueVirtualKey } = await import('../keys/key-admin.js');
    const { key, listed } = await issueVirtualKey({
      ledger,
      secret: loadKeySecret({ stateDir }),
      name: flags.name,
      tags: Object.fromEntries(flags.tag ?? []),
      ...(flags.models === undefined ? {} : { models: flags.models }),
      ...(flags.dailyUsd === undefined ? {} : { dailyUsd: flags.dailyUsd }),
      ...(flags.rpm === undefined ? {} : { rpm: flags.rpm }),
      ...(flags.tpm === undefined ? {} : { tpm: flags.tpm }),
      ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
      ...(flags.expires === undefined ? {} : { expiresAt: Date.now() + flags.expires }),
    });
    if (flags.json === true) {
      const { name, id, ...rest } = listed;
      process.stdout.write(`${JSON.stringify({ id, name, key, ...rest })}\n`);
    } else {
      process.stdout.write(`${key}\n`);
    }
    process.stderr.write(
      `switchboard: created virtual key ${listed.name} (${listed.id}); it is shown only this once, so store it now\n` +
        `use it with Claude Code through the gateway: ANTHROPIC_AUTH_TOKEN=<key> ANTHROPIC_BASE_URL=${GATEWAY_URL} claude\n`,
    );
  };
}

function listKeys(flags: { json?: boolean }): LedgerAction {
  return async (ledger) => {
    const { listedVirtualKey } = await import('../keys/key-admin.js');
    const listed = (await ledger.listVirtualKeys()).map(listedVirtualKey);
    if (flags.json === true) {
      process.stdout.write(`${JSON.stringify(listed)}\n`);
    } else if (listed.length === 0) {
      process.stdout.write('no virtual keys (make one with `switchboard keys create --name NAME`)\n');
    } else {
      const now = Date.now();
      for (const key of listed) process.stdout.write(`${describe(key, now)}\n`);
    }
  };
}

function revokeKey(target: string): LedgerAction {
  return async (ledger) => {
    if (!(await ledger.revokeVirtualKey(target, Date.now()))) {
      throw new SwitchboardError(
        'KEY_NOT_FOUND',
        `there is no virtual key named ${target} in ${ledger.path}`,
        {
          hint: 'see the names and ids with `switchboard keys list`, run with the same --state-dir or database',
        },
      );
    }
    process.stdout.write(`revoked virtual key ${target}\n`);
  };
}

/** One line of `keys list`. */
function describe(key: ListedVirtualKey, now: number): string {
  const tags = Object.entries(key.tags).map(([name, value]) => `${name}=${value}`);
  const { dailyUsd, rpm, tpm, concurrency } = key.limits;
  const limits = [
    dailyUsd === undefined ? undefined : `${formatUsd(dailyUsd)}/day`,
    rpm === undefined ? undefined : `${rpm} rpm`,
    tpm === undefined ? undefined : `${tpm} tpm`,
    concurrency === undefined ? undefined : `${concurrency} at once`,
  ].filter((part) => part !== undefined);
  const state =
    key.revoked !== null
      ? `revoked ${key.revoked}`
      : key.expires !== null && Date.parse(key.expires) <= now
        ? `expired ${key.expires}`
        : key.expires === null
          ? 'active'
          : `active until ${key.expires}`;
  return [
    key.name,
    key.id,
    `${key.prefix}…`,
    tags.length === 0 ? 'no tags' : tags.join(','),
    key.models === null ? 'any model' : `models ${key.models.join(',')}`,
    limits.length === 0 ? 'no limits' : limits.join(', '),
    state,
    `created ${key.created}`,
  ].join('  ');
}

function collectTag(value: string, previous: [string, string][] | undefined): [string, string][] {
  const tag = tagOf(value);
  if (tag === undefined) throw new InvalidArgumentError('expected name=value, e.g. team=web');
  return [...(previous ?? []), tag];
}

function modelList(value: string): string[] {
  const models = value.split(',').map((model) => model.trim());
  if (models.some((model) => model === ''))
    throw new InvalidArgumentError('expected model names separated by commas, e.g. sonnet,haiku');
  return models;
}

function number(min: number, whole: boolean): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (
      value.trim() === '' ||
      !Number.isFinite(parsed) ||
      parsed < min ||
      (whole && !Number.isInteger(parsed))
    ) {
      throw new InvalidArgumentError(
        whole ? `expected a whole number of ${min} or more` : `expected a number, ${min} or more`,
      );
    }
    return parsed;
  };
}

function expiry(value: string): number {
  const milliseconds = durationMs(value);
  if (!(milliseconds > 0)) throw new InvalidArgumentError('expected a duration such as 30d, 12h or 90m');
  return milliseconds;
}
