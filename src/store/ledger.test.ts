import { fork, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import type { RouteDecision } from '../core/route-types.js';
import { DEFAULT_STATE_DIR, LEDGER_FILE_NAME, hashText, openLedger } from './ledger.js';
import type { Ledger, OpenLedgerOptions } from './ledger.js';
import type { SpendCap } from './budget-reservations.js';
import { LATEST_SCHEMA_VERSION, LEDGER_APPLICATION_ID, MIGRATIONS } from './migrations.js';
import { callAttempt } from './__fixtures__/call-attempt.js';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from '../../test/helpers/postgres.js';

let directory: string;
const opened: Ledger[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'switchboard-ledger-'));
});

afterEach(async () => {
  for (const ledger of opened.splice(0)) await ledger.close();
  rmSync(directory, { recursive: true, force: true });
});

/** Where a group of tests keeps its ledger: the SQLite file, or a fresh PostgreSQL database per test. */
interface Backend {
  name: string;
  skip?: string;
  /** Opens a ledger on this test's database, closed after the test. */
  open(options?: { storeText?: boolean }): Ledger;
}

function backends(): Backend[] {
  let database: TestDatabase | undefined;
  const postgres: Backend = {
    name: 'postgres',
    ...(POSTGRES_SKIP === undefined ? {} : { skip: POSTGRES_SKIP }),
    open: (options = {}) => {
      const ledger = openLedger({ url: database!.url, ...options });
      opened.push(ledger);
      return ledger;
    },
  };
  beforeEach(async (context) => {
    if (context.task.suite?.name === 'on postgres') {
      if (POSTGRES_SKIP !== undefined) return context.skip();
      database = await createTestDatabase();
    }
  });
  afterEach(async () => {
    for (const ledger of opened.splice(0)) await ledger.close();
    await database?.drop();
    database = undefined;
  });
  return [{ name: 'sqlite', open: (options = {}) => open(options) }, postgres];
}

/** Opens a ledger that the test cleans up even when an assertion fails. */
function open(options: OpenLedgerOptions = {}): Ledger {
  const ledger = openLedger({ stateDir: directory, ...options });
  opened.push(ledger);
  return ledger;
}

function decision(id: string, overrides: Partial<RouteDecision> = {}): RouteDecision {
  return {
    id,
    skill: 'summarise',
    confidence: 0.82,
    reasoning: 'matched pattern summar',
    method: 'rules',
    candidates: [
      { skill: 'summarise', score: 0.82 },
      { skill: 'translate', score: 0.1 },
    ],
    costUsd: 0.00012,
    durationMs: 3.5,
    timings: { rules: 1.25, local: 2.25 },
    warnings: ['a warning that is not stored'],
    ...overrides,
  };
}

/** Expects `action` to throw (or reject with) a one-line STORE_ERROR (or `code`) that names `file` and carries a hint. */
async function expectStoreError(action: () => unknown, file: string, code = 'STORE_ERROR'): Promise<void> {
  let thrown: unknown;
  try {
    await action();
  } catch (error) {
    thrown = error;
  }
  expect(isSwitchboardError(thrown), `expected a SwitchboardError, got ${String(thrown)}`).toBe(true);
  if (!isSwitchboardError(thrown)) return;
  expect(thrown.code).toBe(code);
  expect(thrown.message).toContain(file);
  expect(thrown.message).not.toContain('\n');
  expect(thrown.hint).toBeTruthy();
}

/** What `openLedger` did in a child process: opened, or the error it threw. */
interface OpenOutcome {
  opened?: boolean;
  name?: string;
  code?: string;
  message?: string;
  hint?: string;
}

/**
 * Opens a ledger in a child process subject to permission bits. Root ignores them through two
 * capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so as root the child runs under util-linux
 * `setpriv` without them: it reads the checkout as before, wherever that lives, but a folder without
 * write permission stops it as it stops an ordinary user. Otherwise the child runs as it is.
 */
function openLedgerAsOrdinaryUser(stateDir: string): OpenOutcome {
  const script = fileURLToPath(new URL('./__fixtures__/open-ledger.mjs', import.meta.url));
  const node = [process.execPath, '--experimental-strip-types', '--no-warnings', script, stateDir];
  const [command, ...args] =
    process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search', ...node] : node;
  const child = spawnSync(command ?? '', args, { encoding: 'utf8' });
  if (child.error !== undefined) throw new Error(`cannot run ${command}: ${child.error.message}`);
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as OpenOutcome;
}

/**
 * Runs a writer fixture (`__fixtures__/<fixture>`) on a ledger of its own under `directory/<folder>`,
 * with `count` rows, to its end (an exit or a kill); the file and how the child ended.
 */
function runWriter(fixture: string, folder: string, count: number) {
  const file = join(directory, folder, LEDGER_FILE_NAME);
  mkdirSync(join(directory, folder));
  const script = fileURLToPath(new URL(`./__fixtures__/${fixture}`, import.meta.url));
  const child = spawnSync(
    process.execPath,
    ['--experimental-strip-types', '--no-warnings', script, file, String(count)],
    { encoding: 'utf8' },
  );
  return { file, child };
}

/** Every byte the ledger has on disk: the database and any WAL or shared-memory side files. */
function ledgerBytes(file: string): Buffer {
  return Buffer.concat(
    ['', '-wal', '-shm', '-journal']
      .map((suffix) => file + suffix)
      .filter((path) => existsSync(path))
      .map((path) => readFileSync(path)),
  );
}

describe('hashText', () => {
  it('is sha256 as lowercase hex', async () => {
    expect(hashText('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('migrations', () => {
  it('are numbered 1, 2, 3 … with no gaps', async () => {
    expect(MIGRATIONS.map((step) => step.version)).toEqual(MIGRATIONS.map((_, index) => index + 1));
    expect(LATEST_SCHEMA_VERSION).toBe(MIGRATIONS.length);
  });
});

describe('openLedger', () => {
  it('creates <stateDir>/ledger.db with WAL, our application id and the latest schema', async () => {
    const stateDir = join(directory, 'nested', 'state');
    const ledger = open({ stateDir });
    expect(ledger.path).toBe(join(stateDir, LEDGER_FILE_NAME));
    expect(ledger.storeText).toBe(false);
    await ledger.recordRouteDecision(decision('d1'), { requestText: 'hello', mode: 'local' });

    const raw = new Database(ledger.path, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION);
      expect(raw.pragma('application_id', { simple: true })).toBe(LEDGER_APPLICATION_ID);
      const indexes = raw
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'route_decisions'")
        .all()
        .map((row) => (row as { name: string }).name);
      expect(indexes).toEqual(expect.arrayContaining(['route_decisions_created_at']));
    } finally {
      raw.close();
    }
  });

  it('defaults to .switchboard/ledger.db in the working directory', async () => {
    const previous = process.cwd();
    process.chdir(directory);
    try {
      const ledger = openLedger();
      await ledger.close();
      expect(ledger.path).toBe(join(process.cwd(), DEFAULT_STATE_DIR, LEDGER_FILE_NAME));
      expect(existsSync(join(directory, DEFAULT_STATE_DIR, LEDGER_FILE_NAME))).toBe(true);
    } finally {
      process.chdir(previous);
    }
  });

  it('opens an explicit path, creating its folder', async () => {
    const file = join(directory, 'elsewhere', 'custom.sqlite');
    const ledger = open({ path: file });
    expect(ledger.path).toBe(file);
    expect(existsSync(file)).toBe(true);
  });

  it('supports a private in-memory ledger', async () => {
    const ledger = open({ path: ':memory:' });
    await ledger.recordRouteDecision(decision('m1'), { requestText: 'x', mode: 'local' });
    expect(await ledger.countRouteDecisions()).toBe(1);
  });
});

describe('route decisions', () => {
  describe.each(backends())('on $name', (backend) => {
    const open = backend.open;
    it('round-trips every field', async () => {
      const ledger = open();
      const createdAt = new Date('2025-03-01T10:00:00.000Z');
      await ledger.recordRouteDecision(decision('d1'), {
        requestText: '  Summarise THIS  ',
        normalizedText: 'summarise this',
        mode: 'local',
        skillsHash: 'skills-abc',
        tags: { caller: 'ci', experiment: 'a' },
        createdAt,
      });

      expect(await ledger.getRouteDecision('d1')).toEqual({
        id: 'd1',
        createdAt: '2025-03-01T10:00:00.000Z',
        requestHash: hashText('summarise this'),
        skill: 'summarise',
        confidence: 0.82,
        method: 'rules',
        reasoning: 'matched pattern summar',
        candidates: [
          { skill: 'summarise', score: 0.82 },
          { skill: 'translate', score: 0.1 },
        ],
        durationMs: 3.5,
        costUsd: 0.00012,
        timings: { rules: 1.25, local: 2.25 },
        mode: 'local',
        skillsHash: 'skills-abc',
        tags: { caller: 'ci', experiment: 'a' },
      });
      expect(await ledger.getRouteDecision('missing')).toBeUndefined();
    });

    it('hashes the request text when no normalized text is given, and omits absent optional fields', async () => {
      const ledger = open();
      await ledger.recordRouteDecision(decision('d1', { skill: 'none', method: 'fallback' }), {
        requestText: 'raw text',
        mode: 'rules-only',
      });
      const stored = await ledger.getRouteDecision('d1');
      expect(stored?.requestHash).toBe(hashText('raw text'));
      expect(stored?.tags).toEqual({});
      expect(stored).not.toHaveProperty('skillsHash');
      expect(stored).not.toHaveProperty('requestText');
      expect(stored?.skill).toBe('none');
    });

    it('lists newest first, honouring limit and since, and counts', async () => {
      const ledger = open();
      const base = Date.parse('2025-01-01T00:00:00Z');
      for (let index = 0; index < 5; index += 1) {
        await ledger.recordRouteDecision(decision(`d${index}`), {
          requestText: `request ${index}`,
          mode: 'local',
          createdAt: new Date(base + index * 60_000),
        });
      }
      expect(await ledger.countRouteDecisions()).toBe(5);
      expect((await ledger.listRouteDecisions()).map((row) => row.id)).toEqual([
        'd4',
        'd3',
        'd2',
        'd1',
        'd0',
      ]);
      expect((await ledger.listRouteDecisions({ limit: 2 })).map((row) => row.id)).toEqual(['d4', 'd3']);
      const since = new Date(base + 3 * 60_000);
      for (const value of [since, since.getTime(), since.toISOString()]) {
        expect((await ledger.listRouteDecisions({ since: value })).map((row) => row.id)).toEqual([
          'd4',
          'd3',
        ]);
      }
      // Row by row, oldest first, for readers of the whole ledger (metrics export).
      const visited: string[] = [];
      expect(await ledger.eachRouteDecision({}, (row) => visited.push(row.id))).toBe(5);
      expect(visited).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
      const recent: string[] = [];
      expect(await ledger.eachRouteDecision({ since }, (row) => recent.push(row.id))).toBe(2);
      expect(recent).toEqual(['d3', 'd4']);
    });

    it('keeps insertion order among decisions made in the same millisecond', async () => {
      const ledger = open();
      const createdAt = new Date();
      for (const id of ['a', 'b', 'c'])
        await ledger.recordRouteDecision(decision(id), { requestText: id, mode: 'local', createdAt });
      expect((await ledger.listRouteDecisions()).map((row) => row.id)).toEqual(['c', 'b', 'a']);
    });

    it('rejects bad list options and dates as INVALID_INPUT', async () => {
      const ledger = open();
      await expect(ledger.listRouteDecisions({ limit: 0 })).rejects.toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
      await expect(ledger.listRouteDecisions({ since: 'yesterday-ish' })).rejects.toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
      await expect(
        ledger.recordRouteDecision(decision('d1'), {
          requestText: 'x',
          mode: 'local',
          createdAt: new Date(NaN),
        }),
      ).rejects.toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    });

    it('keeps rows across close and reopen', async () => {
      const first = open();
      await first.recordRouteDecision(decision('d1'), { requestText: 'one', mode: 'local' });
      await first.recordRouteDecision(decision('d2'), { requestText: 'two', mode: 'local' });
      await first.close();

      const second = open();
      expect(await second.countRouteDecisions()).toBe(2);
      expect((await second.getRouteDecision('d2'))?.requestHash).toBe(hashText('two'));
    });

    it('keeps the first of two decisions with one id', async () => {
      const ledger = open();
      await ledger.recordRouteDecision(decision('d1'), { requestText: 'x', mode: 'local' });
      await ledger.recordRouteDecision(
        { ...decision('d1'), skill: 'other' },
        { requestText: 'y', mode: 'local' },
      );
      expect(await ledger.countRouteDecisions()).toBe(1);
      expect((await ledger.getRouteDecision('d1'))?.skill).toBe(decision('d1').skill);
      await ledger.close();
    });

    it('reports use after close as STORE_ERROR, and closing twice is harmless', async () => {
      const ledger = open();
      await ledger.close();
      await ledger.close();
      await expectStoreError(() => ledger.countRouteDecisions(), ledger.path);
    });
  });
});

describe('request text privacy', () => {
  // A marker unlikely to occur by chance in SQLite's own bytes.
  const secret = 'PRIVATE-PROMPT-7f3a9c please summarise my medical report';

  it('stores only the hash by default: the text appears nowhere on disk', async () => {
    const ledger = openLedger({ stateDir: directory });
    await ledger.recordRouteDecision(decision('d1'), {
      requestText: secret,
      normalizedText: secret.toLowerCase(),
      mode: 'local',
    });
    expect(await ledger.getRouteDecision('d1')).not.toHaveProperty('requestText');
    // Read while open (rows may sit in the WAL) and after close (checkpointed into the main file).
    const needles = [secret, secret.toLowerCase(), 'PRIVATE-PROMPT-7f3a9c'].map((text) => Buffer.from(text));
    for (const needle of needles) expect(ledgerBytes(ledger.path).includes(needle)).toBe(false);
    await ledger.close();
    for (const needle of needles) expect(ledgerBytes(ledger.path).includes(needle)).toBe(false);
    expect(ledgerBytes(ledger.path).includes(Buffer.from(hashText(secret.toLowerCase()), 'hex'))).toBe(true);
  });

  it('stores the text when storeText is true', async () => {
    const ledger = openLedger({ stateDir: directory, storeText: true });
    expect(ledger.storeText).toBe(true);
    await ledger.recordRouteDecision(decision('d1'), { requestText: secret, mode: 'local' });
    expect((await ledger.getRouteDecision('d1'))?.requestText).toBe(secret);
    await ledger.close();
    expect(ledgerBytes(ledger.path).includes(Buffer.from(secret))).toBe(true);
  });
});

describe('bad paths', () => {
  it('reports a folder that cannot be created', async () => {
    const blocker = join(directory, 'a-file');
    writeFileSync(blocker, 'not a folder');
    await expectStoreError(() => openLedger({ stateDir: join(blocker, 'state') }), blocker);
    expect(readFileSync(blocker, 'utf8')).toBe('not a folder');
  });

  it('reports a ledger path that is a directory', async () => {
    const folder = join(directory, 'folder');
    mkdirSync(folder);
    await expectStoreError(() => openLedger({ path: folder }), folder);
  });

  it('reports a folder without write permission', async () => {
    const readOnly = join(directory, 'read-only');
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    try {
      const outcome = openLedgerAsOrdinaryUser(readOnly);
      // A folder the ledger cannot be written in is told apart from other store errors (exit 75, not 6).
      expect(outcome).toMatchObject({ name: 'SwitchboardError', code: 'LEDGER_UNWRITABLE' });
      expect(outcome.message).toContain(readOnly);
      expect(outcome.message).not.toContain('\n');
      expect(outcome.hint).toMatch(/writable/);
      expect(readdirSync(readOnly)).toEqual([]);
    } finally {
      chmodSync(readOnly, 0o755);
    }
  });

  it('refuses a file that is not a SQLite database and leaves it untouched', async () => {
    const file = join(directory, 'notes.db');
    const content = 'these are my notes, not a database\n'.repeat(200);
    writeFileSync(file, content);
    await expectStoreError(() => openLedger({ path: file }), file);
    expect(readFileSync(file, 'utf8')).toBe(content);
    expect(readdirSync(directory)).toEqual(['notes.db']);
  });

  it("refuses another program's SQLite database and leaves it untouched", async () => {
    const file = join(directory, 'other-app.db');
    const other = new Database(file);
    other.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');");
    other.close();
    const before = readFileSync(file);

    await expectStoreError(() => openLedger({ path: file }), file, 'DATABASE_FOREIGN');
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(directory)).toEqual(['other-app.db']);
  });

  it('refuses a ledger written by a newer schema version', async () => {
    const ledger = openLedger({ stateDir: directory });
    await ledger.recordRouteDecision(decision('d1'), { requestText: 'x', mode: 'local' });
    await ledger.close();
    const raw = new Database(ledger.path);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
    raw.close();

    await expectStoreError(() => openLedger({ stateDir: directory }), ledger.path);
    try {
      openLedger({ stateDir: directory });
    } catch (error) {
      expect(String((error as { hint?: string }).hint)).toMatch(/upgrade/i);
    }
    const check = new Database(ledger.path, { readonly: true });
    expect(check.prepare('SELECT count(*) AS count FROM route_decisions').get()).toEqual({ count: 1 });
    check.close();
  });
});

describe('batched call attempts', () => {
  it('are on disk after the process exits without closing the ledger', async () => {
    const { file, child } = runWriter('exit-without-close.mjs', 'exit', 25);
    expect(child.status).toBe(0);
    const ledger = openLedger({ path: file });
    expect((await ledger.callStats()).attempts).toBe(25);
    await ledger.close();
  });

  it('are visible to reads in the same process at once', async () => {
    const ledger = openLedger({ path: join(directory, 'reads.db') });
    await ledger.recordCallAttempt(callAttempt('a', 0.25));
    expect(await ledger.spendSince(0, { provider: 'openai' })).toBe(0.25);
    await ledger.close();
  });

  it('reject their callers when another process holds the write lock past the busy timeout, and later ones are written', async () => {
    const file = join(directory, 'locked.db');
    const ledger = open({ path: file });
    await ledger.recordCallAttempt(callAttempt('a', 1));
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    // The write waits for the lock (the busy timeout) and fails: the caller is told its row is not in.
    await expect(ledger.recordCallAttempt(callAttempt('b', 2))).rejects.toThrow(
      expect.objectContaining({ code: 'STORE_ERROR', message: expect.stringMatching(/locked/) }),
    );
    other.exec('COMMIT');
    other.close();
    await ledger.recordCallAttempt(callAttempt('c', 4));
    expect(await ledger.spendSince(0, { provider: 'openai' })).toBe(5);
  }, 60_000);

  it('are committed when their promise resolves, sharing one transaction when recorded together', async () => {
    const file = join(directory, 'group.db');
    const writer = open({ path: file });
    const reader = new Database(file, { readonly: true });
    const count = () => (reader.prepare('SELECT count(*) AS n FROM call_attempts').get() as { n: number }).n;
    const recorded = Array.from({ length: 10 }, (_, index) =>
      writer.recordCallAttempt(callAttempt(`g${index}`, 1)),
    );
    // Recorded, not yet committed: nothing is acknowledged, nothing is in the file.
    expect(count()).toBe(0);
    await Promise.all(recorded);
    expect(count()).toBe(10);
    reader.close();
  });

  it('reach other connections once flushed, without a read or a close', async () => {
    const file = join(directory, 'flush.db');
    const writer = open({ path: file });
    const reader = open({ path: file });
    await writer.recordCallAttempt(callAttempt('a', 0.25));
    await writer.flush();
    expect(await reader.spendSince(0, { provider: 'openai' })).toBe(0.25);
  });
});

describe('route decisions and cache entries, group-committed', () => {
  it('lose nothing on kill -9 that a resolved promise acknowledged', async () => {
    const { file, child } = runWriter('kill-after-queue.mjs', 'crash', 40);
    expect(child.signal, child.stderr).toBe('SIGKILL');
    const ledger = open({ path: file });
    const ids = (await ledger.listRouteDecisions({ limit: 100 })).map((row) => row.id);
    // decision-40 was recorded without waiting: it may or may not be in; the 40 before it must.
    expect(ids.filter((id) => id !== 'decision-40').sort()).toEqual(
      Array.from({ length: 40 }, (_, index) => `decision-${index}`).sort(),
    );
    expect(await ledger.getCachedDecision('key-39', 0)).toMatchObject({ id: 'decision-39' });
  });

  it('are written at a normal exit without close, and read back whole', async () => {
    const { file, child } = runWriter('exit-without-close.mjs', 'exit', 6);
    expect(child.status, child.stderr).toBe(0);
    const ledger = open({ path: file });
    expect(await ledger.countRouteDecisions()).toBe(7);
    expect(await ledger.getRouteDecision('decision-late')).toMatchObject({ skill: 'none' });
    expect(await ledger.getRouteDecision('decision-5')).toMatchObject({
      skill: 'fix-bug',
      reasoning: 'matched /fix/ (rule)',
      candidates: [
        { skill: 'fix-bug', score: 0.9 },
        { skill: 'none', score: 0.1235 },
      ],
      timings: { rules: 0.012 },
      durationMs: 1.5,
      tags: { caller: 'ci' },
    });
  });

  it('brings decisions of schema 12 into the compact rows, reading back the same', async () => {
    const file = join(directory, 'old.db');
    const old = new Database(file);
    for (const step of MIGRATIONS.filter(({ version }) => version <= 12)) old.exec(step.sql);
    old.pragma(`application_id = ${LEDGER_APPLICATION_ID}`);
    old.pragma('user_version = 12');
    const insert = old.prepare(
      'INSERT INTO route_decisions (id, created_at, request_hash, request_text, skill, confidence, method, reasoning, ' +
        'candidates, duration_ms, cost_usd, timings, mode, skills_hash, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    insert.run(
      'old-1',
      1_000,
      hashText('one'),
      null,
      'fix-bug',
      0.9,
      'rules',
      'matched /fix/',
      '[{"skill":"fix-bug","score":0.9}]',
      2.5,
      0,
      '{"rules":0.1}',
      'local',
      'abc',
      '{}',
    );
    insert.run(
      'old-2',
      2_000,
      hashText('two'),
      'two',
      'none',
      0.2,
      'llm',
      'llm (anthropic): unsure',
      '[]',
      800.25,
      0.0012,
      '{"llm":800}',
      'hybrid',
      null,
      '{"caller":"ci"}',
    );
    old
      .prepare(
        "INSERT INTO route_feedback (decision_id, skill, created_at) VALUES ('old-2', 'fix-bug', 3000)",
      )
      .run();
    old.close();

    const ledger = open({ path: file });
    const [second, first] = await ledger.listRouteDecisions();
    expect(first).toEqual({
      id: 'old-1',
      createdAt: new Date(1_000).toISOString(),
      requestHash: hashText('one'),
      skill: 'fix-bug',
      confidence: 0.9,
      method: 'rules',
      reasoning: 'matched /fix/',
      candidates: [{ skill: 'fix-bug', score: 0.9 }],
      durationMs: 2.5,
      costUsd: 0,
      timings: { rules: 0.1 },
      mode: 'local',
      skillsHash: 'abc',
      tags: {},
    });
    expect(second).toMatchObject({
      id: 'old-2',
      requestText: 'two',
      skill: 'none',
      costUsd: 0.0012,
      tags: { caller: 'ci' },
    });
    expect(await ledger.listFeedback()).toEqual([{ decisionId: 'old-2', skill: 'fix-bug' }]);
  });

  it('prunes decisions, their feedback and old cache entries before a time, and counts since a time', async () => {
    const ledger = open({ path: join(directory, 'prune.db') });
    for (const [id, at] of [
      ['a', 1_000],
      ['b', 2_000],
      ['c', 3_000],
    ] as const) {
      await ledger.recordRouteDecision(decision(id), {
        requestText: id,
        mode: 'local',
        createdAt: new Date(at),
      });
      await ledger.cacheDecision(`key-${id}`, decision(id), { storedAt: at, ttlMs: 1e9, maxEntries: 100 });
    }
    await ledger.recordRouteDecision(
      decision('llm-1', { method: 'llm', reasoning: 'llm (anthropic): asks about PRIVATE-thing' }),
      { requestText: 'x', mode: 'hybrid', createdAt: new Date(1_500) },
    );
    await ledger.recordFeedback('a', 'none');
    await ledger.recordFeedback('c', 'none');
    expect(await ledger.countRouteDecisions({ since: 2_000 })).toBe(2);
    expect(await ledger.countRouteDecisions({ since: 1_500 })).toBe(3);
    expect(await ledger.pruneRouteDecisions(2_500)).toEqual({ decisions: 3, feedback: 1, cached: 2 });
    // An LLM's reasoning lives in its row, never in route_names, so it goes with the decision.
    const names = new Database(join(directory, 'prune.db'), { readonly: true });
    expect(names.prepare("SELECT count(*) AS n FROM route_names WHERE name LIKE '%PRIVATE%'").get()).toEqual({
      n: 0,
    });
    names.close();
    expect((await ledger.listRouteDecisions()).map((row) => row.id)).toEqual(['c']);
    expect(await ledger.listFeedback()).toEqual([{ decisionId: 'c', skill: 'none' }]);
    expect(await ledger.getCachedDecision('key-b', 0)).toBeUndefined();
    expect(await ledger.getCachedDecision('key-c', 0)).toMatchObject({ id: 'c' });
  });
});

describe('budget reservations held by other processes', () => {
  it('counts the holds another connection took or ended since this process last checked', async () => {
    const ledger = open();
    const file = join(directory, LEDGER_FILE_NAME);
    const now = Date.now();
    const hold = (id: string, amountUsd: number) =>
      ledger.reserveSpend({
        id,
        provider: 'openai',
        tags: { team: 'red' },
        createdAt: now,
        expiresAt: now + 60_000,
        amountUsd,
        caps: [{ since: 0, capUsd: 1, tag: 'team=red' }],
      });
    expect((await hold('mine', 0.25)).reserved).toBe(true);
    // Another process's connection to the same file: its writes are not this process's own.
    const other = new Database(file);
    other.pragma('busy_timeout = 5000');
    other
      .prepare(
        'INSERT INTO budget_reservations (id, created_at, expires_at, provider, tags, amount_usd) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('theirs', now, now + 60_000, 'gemini', '{"team":"red"}', 0.5);
    expect(await hold('too-much', 0.5)).toMatchObject({
      reserved: false,
      standings: [{ reservedUsd: 0.75 }],
    });
    expect((await hold('fits', 0.25)).reserved).toBe(true);
    other.prepare('DELETE FROM budget_reservations WHERE id = ?').run('theirs');
    other.close();
    expect(await hold('freed', 0.5)).toMatchObject({ reserved: true, standings: [{ reservedUsd: 0.5 }] });
  });
});

describe('several processes writing at once', () => {
  const workerScript = fileURLToPath(new URL('./__fixtures__/concurrent-writer.mjs', import.meta.url));
  const writerCount = 4;
  const rowsPerWriter = 200;

  it(`keeps all ${writerCount} × ${rowsPerWriter} rows without SQLITE_BUSY`, async () => {
    const file = join(directory, 'shared', LEDGER_FILE_NAME);
    mkdirSync(join(directory, 'shared'));

    const children = Array.from({ length: writerCount }, (_, writer) => {
      const stderr: Buffer[] = [];
      const child = fork(workerScript, [file, String(writer), String(rowsPerWriter)], {
        execPath: process.execPath,
        execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
      const ready = new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) =>
          reject(new Error(`writer ${writer} exited early (${code}): ${Buffer.concat(stderr)}`)),
        );
      });
      const exited = new Promise<{ writer: number; code: number | null; stderr: string }>((resolve) => {
        child.on('exit', (code) => resolve({ writer, code, stderr: Buffer.concat(stderr).toString() }));
      });
      return { child, ready, exited };
    });

    // Start every writer only once all have loaded, so their opens and inserts really overlap.
    await Promise.all(children.map(({ ready }) => ready));
    for (const { child } of children) child.send('go');
    const results = await Promise.all(children.map(({ exited }) => exited));

    for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });
    const ledger = open({ path: file });
    expect(await ledger.countRouteDecisions()).toBe(writerCount * rowsPerWriter);
    const ids = new Set(
      (await ledger.listRouteDecisions({ limit: writerCount * rowsPerWriter })).map((row) => row.id),
    );
    for (let writer = 0; writer < writerCount; writer += 1) {
      for (let index = 0; index < rowsPerWriter; index += 1) {
        expect(ids.has(`writer-${writer}-${index}`)).toBe(true);
      }
    }
  });
});

describe('spending, reservations, cooldowns, the decision cache and feedback', () => {
  describe.each(backends())('on $name', (backend) => {
    const attempt = (id: string, costUsd: number, tags: Record<string, string> = {}) =>
      callAttempt(id, costUsd, { tags });

    it('sums spending by provider and by key=value tag, counting its own attempts at once', async () => {
      const ledger = backend.open();
      await ledger.recordCallAttempt(attempt('a', 0.25, { team: 'red', run: 'r1' }));
      await ledger.recordCallAttempt(attempt('b', 0.5, { team: 'blue' }));
      expect(await ledger.spendSince(0)).toBe(0.75);
      expect(await ledger.spendSince(0, { provider: 'openai' })).toBe(0.75);
      expect(await ledger.spendSince(0, { provider: 'gemini' })).toBe(0);
      expect(await ledger.spendSince(0, { tag: 'team=red' })).toBe(0.25);
      expect(await ledger.spendSince(0, { tag: 'team=green' })).toBe(0);
      expect(await ledger.spendSince(Date.now() + 60_000)).toBe(0);
      expect((await ledger.callStats()).attempts).toBe(2);
    });

    it('lets exactly as many parallel reservations through as the cap allows', async () => {
      const ledgers = [backend.open(), backend.open(), backend.open()];
      // Open the connections first, so the reservations really overlap instead of queueing on connects.
      await Promise.all(Array.from({ length: 12 }, (_, index) => ledgers[index % 3]!.countRouteDecisions()));
      const now = Date.now();
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          ledgers[index % ledgers.length]!.reserveSpend({
            id: `r${index}`,
            provider: 'openai',
            tags: {},
            createdAt: now,
            expiresAt: now + 60_000,
            amountUsd: 0.3,
            caps: [{ since: 0, capUsd: 1 }],
          }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.reserved)).toHaveLength(3);
      expect(await ledgers[0]!.reservedAt(now)).toBeCloseTo(0.9);
      await ledgers[1]!.releaseReservation('r0');
      await ledgers[1]!.releaseReservation('r1');
      await ledgers[1]!.releaseReservation('r2');
      await ledgers[1]!.releaseReservation('r3');
      expect(await ledgers[2]!.reservedAt(now)).toBeCloseTo(
        0.3 * outcomes.slice(4).filter((o) => o.reserved).length,
      );
    });

    it('refuses the reservation that would pass a cap however many are open', async () => {
      const ledger = backend.open();
      const now = Date.now();
      const hold = (
        id: string,
        amountUsd: number,
        tags: Record<string, string>,
        cap: Partial<SpendCap> = {},
      ) =>
        ledger.reserveSpend({
          id,
          provider: 'openai',
          tags,
          createdAt: now,
          expiresAt: now + 60_000,
          amountUsd,
          caps: [{ since: 0, capUsd: 1, ...cap }],
        });
      // 1,000 open holds of 2^-10 dollars, half of them team=red: sums exact in binary.
      for (let index = 0; index < 1_000; index += 1) {
        const outcome = await hold(`open-${index}`, 2 ** -10, { team: index % 2 === 0 ? 'red' : 'blue' });
        expect(outcome.reserved).toBe(true);
      }
      const left = 1 - 1_000 * 2 ** -10;
      expect(await hold('too-much', left + 2 ** -20, {})).toMatchObject({
        reserved: false,
        standings: [{ spentUsd: 0, reservedUsd: 1_000 * 2 ** -10 }],
      });
      expect(await hold('exact-fit', left, {})).toMatchObject({ reserved: true });
      expect((await hold('one-more', 2 ** -20, {})).reserved).toBe(false);
      // Under a cap of the red half alone: 500 holds of 2^-10 leave room for 12 more.
      const red = { tag: 'team=red', capUsd: 0.5 };
      expect(await hold('red-13', 13 * 2 ** -10, { team: 'red' }, red)).toMatchObject({
        reserved: false,
        standings: [{ reservedUsd: 500 * 2 ** -10 }],
      });
      expect((await hold('red-12', 12 * 2 ** -10, { team: 'red' }, red)).reserved).toBe(true);
      // A settled hold counts as its attempt's cost, a released one not at all.
      await ledger.settleReservation('open-0', callAttempt('settled', 2 ** -11));
      await ledger.releaseReservation('open-1');
      expect(await hold('too-much', 2 ** -20, {})).toMatchObject({
        reserved: false,
        standings: [{ spentUsd: 2 ** -11, reservedUsd: (998 + 24 + 12) * 2 ** -10 }],
      });
    });

    it('shares breaker states and recent requests, a request retried counted once', async () => {
      const ledger = backend.open();
      const now = Date.now();
      await ledger.setCooldown({
        spec: 'openai:gpt',
        until: now + 60_000,
        failures: 3,
        reason: 'OVERLOADED',
        updatedAt: now,
      });
      await ledger.setCooldown({ spec: 'gemini:flash', until: now - 1, failures: 1, reason: 'TIMEOUT' });
      expect(await ledger.getCooldown('openai:gpt')).toEqual({
        spec: 'openai:gpt',
        until: now + 60_000,
        failures: 3,
        reason: 'OVERLOADED',
        updatedAt: now,
      });
      expect((await ledger.activeCooldowns(now)).map((row) => row.spec)).toEqual(['openai:gpt']);
      await ledger.recordCallAttempt({ ...attempt('x', 0), success: false, errorCode: 'TIMEOUT' });
      await ledger.recordCallAttempt({
        ...attempt('x', 0),
        id: 'x-2',
        attempt: 2,
        success: false,
        errorCode: 'TIMEOUT',
      });
      await ledger.recordCallAttempt({ ...attempt('y', 0), createdAt: Date.now() + 1 });
      expect(await ledger.recentRequests('openai:gpt-4.1-mini', 0, 5)).toEqual([
        { callId: 'call-y', errorCode: undefined },
        { callId: 'call-x', errorCode: 'TIMEOUT' },
      ]);
    });

    it("answers reads made together each with its own key and age, another ledger's entries included", async () => {
      const writer = backend.open();
      const reader = backend.open();
      const entries = [
        ['k-review', 'review', 1000],
        ['k-release', 'release', 2000],
        ['k-docs', 'docs', 3000],
      ] as const;
      for (const [key, skill, storedAt] of entries) {
        await writer.cacheDecision(
          key,
          { ...decision(key), skill },
          { storedAt, ttlMs: 10_000, maxEntries: 100 },
        );
      }
      await writer.flush();
      // One turn of the event loop: on SQLite these share one statement.
      const [review, release, docs, tooOld, missing, againReview] = await Promise.all([
        reader.getCachedDecision('k-review', 0),
        reader.getCachedDecision('k-release', 1500),
        reader.getCachedDecision('k-docs', 0),
        reader.getCachedDecision('k-review', 1500),
        reader.getCachedDecision('k-none', 0),
        reader.getCachedDecision('k-review', 1000),
      ]);
      expect([review?.skill, release?.skill, docs?.skill, tooOld, missing, againReview?.skill]).toEqual([
        'review',
        'release',
        'docs',
        undefined,
        undefined,
        'review',
      ]);
    });

    it('caches decisions with a TTL and a size bound, and keeps the latest feedback', async () => {
      const ledger = backend.open();
      const stored = decision('c');
      // The table is trimmed about once per thousand writes, not on each: after a thousand, the oldest
      // entries beyond the limit are gone, and an expired one is never read.
      for (let index = 0; index < 1_001; index += 1) {
        await ledger.cacheDecision(`k${index}`, stored, {
          storedAt: 1000 + index,
          ttlMs: 10_000,
          maxEntries: 3,
        });
      }
      await ledger.flush();
      expect(await ledger.getCachedDecision('k1000', 0)).toMatchObject({ skill: 'summarise' });
      expect(await ledger.getCachedDecision('k1', 0)).toBeUndefined();
      expect(await ledger.getCachedDecision('k1000', 3000)).toBeUndefined();
      await ledger.recordRouteDecision(decision('d1'), { requestText: 'x', mode: 'local' });
      await ledger.recordFeedback('d1', 'translate');
      await ledger.recordFeedback('d1', 'none');
      expect(await ledger.listFeedback()).toEqual([{ decisionId: 'd1', skill: 'none' }]);
      await expect(ledger.recordFeedback('nope', 'x')).rejects.toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    });
  });
});
