import type Database from 'better-sqlite3';
import type { SqlClient, SqlDatabase } from './sql/sql-database.js';

/**
 * Marks a SQLite file as a Switchboard ledger (`PRAGMA application_id`, the ASCII bytes "SWBD"), so we
 * can tell our own files from other applications' databases and refuse to touch the latter.
 */
export const LEDGER_APPLICATION_ID = 0x53574244;

/** One forward-only schema step. Version `n` turns a schema at `n - 1` into one at `n`. */
export interface Migration {
  /** The `PRAGMA user_version` the database has after this step. Consecutive, starting at 1. */
  version: number;
  /** What the step adds, for humans reading the list. */
  description: string;
  /** SQL run inside the migration transaction. Statements only; no `BEGIN`/`COMMIT`. */
  sql: string;
  /** PostgreSQL's own SQL for the step, where the SQLite SQL's mechanical translation will not do. */
  postgres?: string;
}

/** Schema 13: route decisions as compact rows (see src/store/route-decision-records.ts). */
const COMPACT_DECISIONS = `
      -- A serve keeps every decision, thousands a second: names that repeat from row to row (skills,
      -- methods, modes, skill-set hashes, a rule's reasoning) are stored once here and referred to by id.
      CREATE TABLE route_names (
        id    INTEGER PRIMARY KEY,
        name  TEXT NOT NULL UNIQUE
      );
      ALTER TABLE route_decisions RENAME TO route_decisions_12;
      DROP INDEX route_decisions_created_at;
      DROP INDEX route_decisions_skill;
      CREATE TABLE route_decisions (
        id              TEXT PRIMARY KEY NOT NULL,
        created_at      INTEGER NOT NULL,    -- epoch milliseconds, UTC
        request_hash    BLOB NOT NULL,       -- sha256 (32 bytes) of the normalized request text
        request_text    TEXT,                -- NULL unless the user opted in to storing text
        skill           INTEGER NOT NULL,    -- route_names.id
        confidence      REAL NOT NULL,
        method          INTEGER NOT NULL,    -- route_names.id
        reasoning       TEXT,                -- NULL when reasoning_name holds it
        reasoning_name  INTEGER,             -- route_names.id of a reasoning that repeats (a rule's)
        candidates      TEXT NOT NULL,       -- JSON [[route_names.id, score], ...]; before 13 [{skill, score}]
        duration_ms     REAL NOT NULL,
        cost_usd        REAL NOT NULL,
        timings         TEXT NOT NULL,       -- JSON object, tier name -> milliseconds
        mode            INTEGER NOT NULL,    -- route_names.id
        skills_hash     INTEGER,             -- route_names.id of the skill set's hash
        tags            TEXT                 -- JSON object of free string tags; NULL for none
      );
      INSERT INTO route_names (name)
        SELECT skill FROM route_decisions_12 UNION SELECT method FROM route_decisions_12
        UNION SELECT mode FROM route_decisions_12
        UNION SELECT skills_hash FROM route_decisions_12 WHERE skills_hash IS NOT NULL;
      INSERT INTO route_decisions (id, created_at, request_hash, request_text, skill, confidence, method,
          reasoning, reasoning_name, candidates, duration_ms, cost_usd, timings, mode, skills_hash, tags)
        SELECT d.id, d.created_at, unhex(d.request_hash), d.request_text, s.id, d.confidence, m.id, d.reasoning,
          NULL, d.candidates, d.duration_ms, d.cost_usd, d.timings, o.id, h.id,
          NULLIF(d.tags, '{}')
        FROM route_decisions_12 d
          JOIN route_names s ON s.name = d.skill
          JOIN route_names m ON m.name = d.method
          JOIN route_names o ON o.name = d.mode
          LEFT JOIN route_names h ON h.name = d.skills_hash
        ORDER BY d.rowid;
      DROP TABLE route_decisions_12;
      CREATE INDEX route_decisions_created_at ON route_decisions (created_at);
    `;

/** Epoch milliseconds of 00:00 UTC of the day of `created_at` (a floor: `%` truncates toward zero). */
const DAY_OF_CREATED_AT = 'created_at - ((created_at % 86400000) + 86400000) % 86400000';

/**
 * Schema 15: spend totals (see src/store/spend-totals.ts). The budget caps read spend per provider and/or
 * `key=value` tag since a day (the UTC day, month, or ever); summed from call_attempts that was a scan of
 * every attempt of the period on every budgeted request. A cap is configured, not known when an attempt
 * is written, so every priced attempt adds its cost to one row for (its UTC day, its provider) and one
 * more for each string tag it carries, (tag key, tag value, day, provider); a cap's spend is the sum of
 * its scope's rows of the days since its start: 1 row a provider today, 31 this month, one a day ever.
 * Rows are added by a trigger on call_attempts, so every insert path (the group commit, a settle, an
 * exit-time flush, a copy, a row written by hand) counts, in the insert's own transaction, and a row
 * ON CONFLICT DO NOTHING skipped counts nothing. Attempts are never deleted, so the totals are of every
 * attempt ever recorded, as the sum was. Filters these rows cannot answer exactly (a `since` inside a day,
 * an empty key or one SQLite's JSON path reads differently) still read call_attempts.
 * tag_key '' marks the row of all the provider's spend: a tag with an empty key is not counted here.
 */
const SPEND_TOTALS_TABLE = `
      CREATE TABLE spend_totals (
        tag_key    TEXT NOT NULL,        -- '' for all of the provider's attempts, else a tag they carried
        tag_value  TEXT NOT NULL,        -- '' with tag_key ''
        day        INTEGER NOT NULL,     -- epoch milliseconds of 00:00 UTC of the attempts' created_at
        provider   TEXT NOT NULL,
        usd        REAL NOT NULL,        -- sum of the attempts' cost_usd (those with a known cost)
        -- Scope first: a cap reads one scope's days, whatever the other scopes hold.
        PRIMARY KEY (tag_key, tag_value, day, provider)
      );`;

/** An object's members in SQLite's json_each, or none for a tags text that is no JSON object. */
const SQLITE_TAGS = (tags: string) =>
  `json_each(CASE WHEN json_valid(${tags}) AND json_type(${tags}) = 'object' THEN ${tags} ELSE '{}' END)`;

const SPEND_TOTALS_SQLITE = `${SPEND_TOTALS_TABLE}
      INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd)
        SELECT '', '', day, provider, sum(cost_usd)
        FROM (SELECT ${DAY_OF_CREATED_AT} AS day, provider, cost_usd FROM call_attempts WHERE cost_usd IS NOT NULL)
        GROUP BY day, provider;
      -- json_extract(tags, '$.key') = value, the scan's filter, matches string members only.
      INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd)
        SELECT tag.key, tag.value, spent.day, spent.provider, sum(spent.cost_usd)
        FROM (SELECT ${DAY_OF_CREATED_AT} AS day, provider, cost_usd, tags FROM call_attempts
              WHERE cost_usd IS NOT NULL) AS spent, ${SQLITE_TAGS('spent.tags')} AS tag
        WHERE tag.type = 'text' AND tag.key <> ''
        GROUP BY tag.key, tag.value, spent.day, spent.provider;
      CREATE TRIGGER call_attempts_spend_totals AFTER INSERT ON call_attempts WHEN NEW.cost_usd IS NOT NULL
      BEGIN
        INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd)
          VALUES ('', '', ${DAY_OF_CREATED_AT.replace(/created_at/g, 'NEW.created_at')}, NEW.provider, NEW.cost_usd)
          ON CONFLICT (tag_key, tag_value, day, provider) DO UPDATE SET usd = usd + excluded.usd;
        INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd)
          SELECT key, value, ${DAY_OF_CREATED_AT.replace(/created_at/g, 'NEW.created_at')}, NEW.provider, NEW.cost_usd
          FROM ${SQLITE_TAGS('NEW.tags')}
          WHERE type = 'text' AND key <> ''
          ON CONFLICT (tag_key, tag_value, day, provider) DO UPDATE SET usd = usd + excluded.usd;
      END;
    `;

/**
 * The rows a set of attempts adds, in PostgreSQL: (scope, day, provider) summed, in key order so that two
 * writers' upserts lock rows in one order (no deadlock). CAST(tags AS JSONB) ->> key, the scan's filter,
 * reads any member that is not null as text: so does jsonb_each_text.
 */
const POSTGRES_SPEND_ROWS = (attempts: string) => `
        WITH spent AS (
          SELECT ${DAY_OF_CREATED_AT} AS day, provider, cost_usd AS usd, CAST(tags AS JSONB) AS tags
          FROM ${attempts} WHERE cost_usd IS NOT NULL
        ), counted AS (
          SELECT '' AS tag_key, '' AS tag_value, day, provider, usd FROM spent
          UNION ALL
          SELECT tag.key, tag.value, day, provider, usd FROM spent,
            jsonb_each_text(CASE WHEN jsonb_typeof(spent.tags) = 'object' THEN spent.tags ELSE '{}' END) AS tag
          WHERE tag.value IS NOT NULL AND tag.key <> ''
        )
        SELECT tag_key, tag_value, day, provider, sum(usd) FROM counted
        GROUP BY tag_key, tag_value, day, provider ORDER BY tag_key, tag_value, day, provider`;

const SPEND_TOTALS_POSTGRES = `${SPEND_TOTALS_TABLE}
      INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd) ${POSTGRES_SPEND_ROWS('call_attempts')};
      -- A statement trigger: a batch of attempts (one unnest insert) adds its rows in one upsert.
      CREATE FUNCTION switchboard_spend_totals() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO spend_totals (tag_key, tag_value, day, provider, usd) ${POSTGRES_SPEND_ROWS('inserted')}
        ON CONFLICT (tag_key, tag_value, day, provider) DO UPDATE SET usd = spend_totals.usd + excluded.usd;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER call_attempts_spend_totals AFTER INSERT ON call_attempts
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION switchboard_spend_totals();
    `;

/**
 * Every schema step, oldest first. Never edit or reorder a released entry: existing ledgers have
 * already run it. To change the schema, append a new entry with the next version number (tables for
 * call attempts, agent runs and workflow steps arrive this way).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'route decisions',
    sql: `
      CREATE TABLE route_decisions (
        id            TEXT PRIMARY KEY NOT NULL,
        created_at    INTEGER NOT NULL,        -- epoch milliseconds, UTC
        request_hash  TEXT NOT NULL,           -- sha256 hex of the normalized request text
        request_text  TEXT,                    -- NULL unless the user opted in to storing text
        skill         TEXT NOT NULL,
        confidence    REAL NOT NULL,
        method        TEXT NOT NULL,
        reasoning     TEXT NOT NULL,
        candidates    TEXT NOT NULL,           -- JSON array of {skill, score}
        duration_ms   REAL NOT NULL,
        cost_usd      REAL NOT NULL,
        timings       TEXT NOT NULL,           -- JSON object, tier name -> milliseconds
        mode          TEXT NOT NULL,
        skills_hash   TEXT,                    -- identifies the skill set the router used
        tags          TEXT NOT NULL DEFAULT '{}' -- JSON object of free string tags
      );
      CREATE INDEX route_decisions_created_at ON route_decisions (created_at);
      CREATE INDEX route_decisions_skill ON route_decisions (skill);
    `,
  },
  {
    version: 2,
    description: 'call attempts',
    sql: `
      CREATE TABLE call_attempts (
        id                 TEXT PRIMARY KEY NOT NULL,
        call_id            TEXT NOT NULL,           -- groups the attempts of one call
        attempt            INTEGER NOT NULL,        -- 1-based, in the order they were made
        created_at         INTEGER NOT NULL,        -- epoch milliseconds, UTC
        provider           TEXT NOT NULL,           -- claude, anthropic, gemini, openai
        spec               TEXT NOT NULL,           -- as written, e.g. claude:haiku
        model_requested    TEXT NOT NULL,
        model_used         TEXT,                    -- as reported by the provider
        success            INTEGER NOT NULL,        -- 1 or 0
        error_code         TEXT,
        duration_ms        REAL NOT NULL,
        input_tokens       INTEGER NOT NULL DEFAULT 0,
        output_tokens      INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd           REAL,                    -- NULL when unknown, never a silent 0
        session_id         TEXT,
        prompt_hash        TEXT NOT NULL,           -- sha256 hex of the prompt
        prompt_text        TEXT,                    -- NULL unless the user opted in to storing text
        tags               TEXT NOT NULL DEFAULT '{}'
      );
      -- One index: every read filters by time first, and each index costs every call a write.
      CREATE INDEX call_attempts_created_at ON call_attempts (created_at);
    `,
  },
  {
    version: 3,
    description: 'provider cooldowns',
    sql: `
      CREATE TABLE provider_cooldowns (
        spec        TEXT PRIMARY KEY NOT NULL,  -- provider:model the breaker guards
        until       INTEGER NOT NULL,           -- epoch milliseconds; no calls before this
        failures    INTEGER NOT NULL,           -- consecutive failures that tripped it
        reason      TEXT NOT NULL,              -- the last error code
        updated_at  INTEGER NOT NULL
      );
    `,
  },
  {
    version: 4,
    description: 'route feedback',
    sql: `
      CREATE TABLE route_feedback (
        decision_id TEXT PRIMARY KEY NOT NULL,  -- the route decision being corrected
        skill       TEXT NOT NULL,              -- the skill that should have been chosen, or none
        created_at  INTEGER NOT NULL
      );
    `,
  },
  {
    version: 5,
    description: 'agent runs',
    sql: `
      CREATE TABLE agent_runs (
        id            TEXT PRIMARY KEY NOT NULL,
        task_id       TEXT NOT NULL,
        title         TEXT NOT NULL,
        repo          TEXT NOT NULL,             -- absolute path of the repository's main worktree
        base_branch   TEXT NOT NULL,             -- the branch the change merges into
        base_commit   TEXT NOT NULL,             -- the commit the run's branch starts from
        branch        TEXT NOT NULL,
        worktree      TEXT NOT NULL,
        phase         TEXT NOT NULL,             -- queued, worktree, agent, verify, merge, done, failed, conflict
        status        TEXT NOT NULL,             -- running, succeeded, failed, conflict, cancelled
        attempt       INTEGER NOT NULL DEFAULT 0,
        session_id    TEXT,
        runner_pid    INTEGER,
        runner_started INTEGER,                  -- the runner process's start (ms), so a reused pid is not taken for it
        child_pid     INTEGER,                   -- leads the agent's (or verify command's) process group
        cost_usd      REAL NOT NULL DEFAULT 0,
        turns         INTEGER NOT NULL DEFAULT 0,
        commit_sha    TEXT,
        merged_commit TEXT,
        error_code    TEXT,
        error         TEXT,
        detail        TEXT,                      -- git output of a conflict, tail of a failed verify
        task          TEXT NOT NULL,             -- JSON of the task, so a run can be resumed
        options       TEXT NOT NULL,             -- JSON of the run's settings (merge mode, limits)
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        ended_at      INTEGER,
        cleaned_at    INTEGER
      );
      CREATE INDEX agent_runs_created_at ON agent_runs (created_at);
      CREATE TABLE agent_run_events (
        run_id   TEXT NOT NULL,
        at       INTEGER NOT NULL,
        phase    TEXT NOT NULL,
        kind     TEXT NOT NULL,                  -- phase, attempt-start, attempt-end, verify, merge, error, ...
        message  TEXT NOT NULL,
        data     TEXT                            -- JSON
      );
      CREATE INDEX agent_run_events_run ON agent_run_events (run_id, at);
    `,
  },
  {
    version: 6,
    description: 'budget reservations',
    sql: `
      -- A call's estimated cost, held against the budget caps while the call is in flight, so parallel
      -- calls (in one process or many) cannot all pass a check made before any of them has spent.
      CREATE TABLE budget_reservations (
        id          TEXT PRIMARY KEY NOT NULL,
        created_at  INTEGER NOT NULL,          -- epoch milliseconds, UTC
        expires_at  INTEGER NOT NULL,          -- stops counting here, so a killed process cannot block the budget
        provider    TEXT NOT NULL,
        tags        TEXT NOT NULL DEFAULT '{}',
        amount_usd  REAL NOT NULL
      );
    `,
  },
  {
    version: 7,
    description: 'cooldowns keyed by endpoint',
    sql: `
      -- The circuit breaker's key: the spec plus where it was sent (base URL, executable), so a dead
      -- endpoint's failures never count against the same spec at another endpoint. NULL: the spec alone.
      ALTER TABLE call_attempts ADD COLUMN cooldown_key TEXT;
    `,
  },
  {
    version: 8,
    description: 'route decision cache',
    sql: `
      CREATE TABLE route_cache (
        key        TEXT PRIMARY KEY NOT NULL,   -- sha256 hex of the normalized request and the router's settings
        decision   TEXT NOT NULL,               -- JSON of the RouteDecision
        stored_at  INTEGER NOT NULL             -- epoch milliseconds; the TTL counts from here
      );
      CREATE INDEX route_cache_stored_at ON route_cache (stored_at);
    `,
  },
  {
    version: 9,
    description: 'workflow runs',
    sql: `
      CREATE TABLE workflow_runs (
        id             TEXT PRIMARY KEY NOT NULL,
        workflow       TEXT NOT NULL,             -- the workflow's name
        file           TEXT NOT NULL,             -- absolute path of the workflow file
        file_hash      TEXT NOT NULL,             -- sha256 hex of the file the run started with
        run_key        TEXT UNIQUE,               -- rendered run_key: a second start with it resumes this run
        inputs         TEXT NOT NULL,             -- JSON of the typed inputs
        status         TEXT NOT NULL,             -- running, waiting, completed, failed, cancelled
        current_step   TEXT,                      -- the next step to run (or the one running, waiting, failed)
        output         TEXT,                      -- JSON of the workflow's output once it ended
        error_code     TEXT,
        error          TEXT,
        cost_usd       REAL NOT NULL DEFAULT 0,   -- sum of the finished step executions' costs
        iterations     INTEGER NOT NULL DEFAULT 0, -- finished step executions (max_iterations counts these)
        limits         TEXT NOT NULL DEFAULT '{}', -- JSON of limits raised on resume, over the file's
        owner_pid      INTEGER,                   -- the process advancing the run (NULL: none)
        owner_host     TEXT,
        owner_token    TEXT,                      -- fences every write of the owner
        owner_started  INTEGER,                   -- the owner process's start (ms), so a reused pid is not taken for it
        heartbeat_at   INTEGER,                   -- epoch ms; a stale one frees the run for another host
        parent_run_id  TEXT,                      -- set for a sub-workflow's run
        parent_key     TEXT,                      -- the parent's step key that started it
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL,
        ended_at       INTEGER
      );
      CREATE INDEX workflow_runs_created_at ON workflow_runs (created_at);
      CREATE INDEX workflow_runs_parent ON workflow_runs (parent_run_id);
      CREATE TABLE workflow_steps (
        key            TEXT PRIMARY KEY NOT NULL, -- <run>/<step>/<visit>[/<item>]: one row per step execution
        run_id         TEXT NOT NULL,
        seq            INTEGER NOT NULL,          -- order of first start within the run
        step           TEXT NOT NULL,
        type           TEXT NOT NULL,             -- a step type, parallel or for_each
        group_key      TEXT,                      -- key of the group execution a member or item belongs to
        item_index     INTEGER,
        item_key       TEXT,
        visit          INTEGER NOT NULL,          -- executions of this step before this one in the run
        attempt        INTEGER NOT NULL,          -- 1, then one more each time an interrupted execution is rerun
        status         TEXT NOT NULL,             -- running, completed, failed, waiting, terminated
        output         TEXT,                      -- JSON
        cost_usd       REAL NOT NULL DEFAULT 0,   -- the execution's tagged call attempts plus agent runs
        counted        INTEGER NOT NULL DEFAULT 0, -- 1 once it counted toward the run's iterations
        progress       TEXT,                      -- JSON notes recorded before an outside effect
        next_step      TEXT,                      -- the route taken ($end to end)
        error_code     TEXT,
        error          TEXT,
        started_at     INTEGER NOT NULL,
        ended_at       INTEGER
      );
      CREATE INDEX workflow_steps_run ON workflow_steps (run_id, seq);
      CREATE TABLE workflow_gates (
        run_id         TEXT NOT NULL,
        step           TEXT NOT NULL,
        visit          INTEGER,                   -- the gate execution it answered; NULL: recorded before the run reached it
        choice         TEXT NOT NULL,
        text           TEXT,
        answered_by    TEXT NOT NULL,
        answered_at    INTEGER NOT NULL
      );
      CREATE INDEX workflow_gates_run ON workflow_gates (run_id, step);
      CREATE TABLE workflow_events (
        run_id         TEXT NOT NULL,
        seq            INTEGER NOT NULL,          -- 1, 2, … per run, append only
        at             INTEGER NOT NULL,
        type           TEXT NOT NULL,
        step           TEXT,
        key            TEXT,
        data           TEXT,                      -- JSON
        PRIMARY KEY (run_id, seq)
      );
    `,
  },
  {
    version: 10,
    description: 'agent runner host and heartbeat',
    sql: `
      -- Where an agent run's runner lives, and when it last said it was alive: with a shared database a
      -- runner may be on another machine, where its pid means nothing here.
      ALTER TABLE agent_runs ADD COLUMN runner_host TEXT;        -- NULL: recorded before (this machine's)
      ALTER TABLE agent_runs ADD COLUMN heartbeat_at INTEGER;    -- epoch ms, stamped while the runner works
    `,
  },
  {
    version: 11,
    description: 'workflow group members run as jobs',
    sql: `
      -- On workers a for_each item or parallel member runs as a job of its own, on any machine: the job's
      -- id is the member's claim, the fence of its writes (the run owner's token fences everything else).
      ALTER TABLE workflow_steps ADD COLUMN claim_token TEXT;     -- NULL: run by the run's owner itself
      ALTER TABLE workflow_steps ADD COLUMN claimed_by TEXT;      -- "pid N on host" of the member's last runner
    `,
  },
  {
    version: 12,
    description: 'runs by last change, for the dashboard',
    sql: `
      -- The dashboard's live list asks for the runs changed since its last look, several times a second.
      CREATE INDEX workflow_runs_updated_at ON workflow_runs (updated_at);
      CREATE INDEX agent_runs_updated_at ON agent_runs (updated_at);
    `,
  },
  {
    version: 13,
    description: 'compact route decisions',
    sql: COMPACT_DECISIONS,
    postgres: COMPACT_DECISIONS.replace(
      'INTEGER PRIMARY KEY',
      // A sequence, not an identity: the translation gives every table an identity rowid already.
      'BIGSERIAL PRIMARY KEY',
    )
      .replace(/\bBLOB\b/g, 'BYTEA')
      .replace('unhex(d.request_hash)', "decode(d.request_hash, 'hex')"),
  },
  {
    version: 14,
    description: 'virtual keys and their rate windows',
    sql: `
      -- Keys the gateway accepts in place of a provider key. The key itself is never stored, only its
      -- HMAC under the server secret (SWITCHBOARD_KEY_SECRET or the state folder's key-secret file).
      CREATE TABLE virtual_keys (
        id           TEXT PRIMARY KEY NOT NULL,  -- key_ and a time-ordered id
        name         TEXT NOT NULL UNIQUE,
        hash         TEXT NOT NULL UNIQUE,       -- HMAC-SHA-256 hex of the key
        prefix       TEXT NOT NULL,              -- the key's first 12 characters, safe to show
        tags         TEXT NOT NULL DEFAULT '{}', -- JSON object, added to every call made with the key
        models       TEXT,                       -- JSON array of the models it may use, NULL for any
        daily_usd    REAL,                       -- NULL: no cap of its own
        rpm          INTEGER,                    -- requests per minute
        tpm          INTEGER,                    -- tokens per minute
        concurrency  INTEGER,                    -- requests in flight
        expires_at   INTEGER,                    -- epoch ms, NULL: never
        created_at   INTEGER NOT NULL,
        revoked_at   INTEGER                     -- epoch ms, NULL: in use
      );
      -- Requests and tokens of a key per fixed minute, shared by every process using the database.
      CREATE TABLE key_rate_windows (
        key_id        TEXT NOT NULL,
        window_start  INTEGER NOT NULL,          -- epoch ms, a multiple of 60000
        requests      INTEGER NOT NULL,
        tokens        INTEGER NOT NULL,
        PRIMARY KEY (key_id, window_start)
      );
    `,
  },
  {
    version: 15,
    description: 'spend totals by day, provider and tag',
    sql: SPEND_TOTALS_SQLITE,
    postgres: SPEND_TOTALS_POSTGRES,
  },
  {
    version: 16,
    description: 'workflow runs carry their trace context',
    sql: `
      -- The W3C traceparent of the span a run started under: a worker or a \`workflow resume\` on any
      -- machine parents its spans under it, so the whole run is one trace.
      ALTER TABLE workflow_runs ADD COLUMN trace_context TEXT;   -- NULL: started without tracing
      `,
  },
  {
    version: 17,
    description: 'guidance for running workflow runs',
    sql: `
      -- Text a person sent a run while it goes (\`workflow guide\`), delivered to the next model turn of
      -- one of its steps: any process on the ledger records it, the run's owner takes it.
      CREATE TABLE workflow_guidance (
        run_id          TEXT NOT NULL,
        step            TEXT,                     -- NULL: the run's next model turn, whichever step takes it
        text            TEXT NOT NULL,
        sent_by         TEXT NOT NULL,
        sent_at         INTEGER NOT NULL,
        delivered_step  TEXT,                     -- NULL until a model turn took it
        delivered_key   TEXT,
        delivered_visit INTEGER,
        delivered_turn  INTEGER,
        delivered_at    INTEGER
      );
      CREATE INDEX workflow_guidance_run ON workflow_guidance (run_id, delivered_at);
    `,
  },
];

/** The schema version this build of Switchboard writes. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((latest, step) => Math.max(latest, step.version), 0);

/** What `readSchemaState` found in a database file. */
export interface SchemaState {
  applicationId: number;
  userVersion: number;
  /** Tables, views, indexes and triggers outside SQLite's own `sqlite_*` names. */
  objectCount: number;
}

/**
 * Reads the markers that tell a fresh file, one of our ledgers and someone else's database apart.
 * One statement, so all three come from the same snapshot: read separately, they could straddle another
 * process's migration commit and show tables without our application id, i.e. look foreign.
 */
export function readSchemaState(database: Database.Database): SchemaState {
  return database
    .prepare(
      'SELECT (SELECT application_id FROM pragma_application_id) AS applicationId, ' +
        '(SELECT user_version FROM pragma_user_version) AS userVersion, ' +
        "(SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\') AS objectCount",
    )
    .get() as SchemaState;
}

/** Why a database cannot be used as a ledger, or `undefined` when it can. */
export type SchemaProblem = { kind: 'foreign' } | { kind: 'newer'; version: number };

/**
 * A file is ours if it carries our application id, or is still completely empty (a fresh file we
 * are about to claim). Anything else belongs to another program.
 */
export function findSchemaProblem(state: SchemaState): SchemaProblem | undefined {
  const fresh = state.applicationId === 0 && state.userVersion === 0 && state.objectCount === 0;
  if (!fresh && state.applicationId !== LEDGER_APPLICATION_ID) return { kind: 'foreign' };
  if (state.userVersion > LATEST_SCHEMA_VERSION) return { kind: 'newer', version: state.userVersion };
  return undefined;
}

/**
 * Brings the schema up to `LATEST_SCHEMA_VERSION`. Runs in one `BEGIN IMMEDIATE` transaction so that
 * several processes opening a fresh ledger at once serialise here: the first migrates, the others wait
 * for the write lock (busy timeout), then re-read the version and find nothing left to do.
 *
 * @returns the problem that stopped the migration, if the file turned out not to be usable.
 */
export function migrate(database: Database.Database): SchemaProblem | undefined {
  const run = database.transaction((): SchemaProblem | undefined => {
    // Re-checked under the write lock: another process may have migrated since we first looked.
    const state = readSchemaState(database);
    const problem = findSchemaProblem(state);
    if (problem !== undefined) return problem;
    for (const step of MIGRATIONS) {
      if (step.version <= state.userVersion) continue;
      database.exec(step.sql);
      database.pragma(`user_version = ${step.version}`);
    }
    if (state.applicationId !== LEDGER_APPLICATION_ID) {
      database.pragma(`application_id = ${LEDGER_APPLICATION_ID}`);
    }
    return undefined;
  });
  return run.immediate();
}

/** The table that marks a PostgreSQL database as a Switchboard ledger and holds its schema version. */
export const POSTGRES_SCHEMA_TABLE = 'switchboard_schema';

/**
 * A migration's SQL for PostgreSQL. The SQLite statements carry over with three changes: whole numbers
 * are 64-bit (`INTEGER` is 32-bit there; epoch milliseconds need more), `REAL` is a double (it is a
 * 4-byte float there), and every table gets the `rowid` SQLite gives each row implicitly, which the
 * stores use to keep insertion order.
 */
export function postgresSql(migration: Migration): string {
  return (migration.postgres ?? migration.sql)
    .replace(/\bINTEGER\b/g, 'BIGINT')
    .replace(/\bREAL\b/g, 'DOUBLE PRECISION')
    .replace(
      /CREATE TABLE (\w+) \(/g,
      'CREATE TABLE $1 (\n        rowid BIGINT GENERATED BY DEFAULT AS IDENTITY,',
    );
}

/**
 * Reads the same three markers as `readSchemaState`, for PostgreSQL: our schema table (application id
 * and version) and how many tables exist outside PostgreSQL's own schemas and pg-boss's (the job queue Switchboard's
 * workers use).
 */
export async function readPostgresSchemaState(database: SqlClient): Promise<SchemaState> {
  const tables = await database.get<{ count: number; ours: number }>(
    'SELECT count(*) AS count, count(*) FILTER (WHERE table_name = ?) AS ours FROM information_schema.tables ' +
      "WHERE table_schema NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'pgboss') AND table_schema NOT LIKE 'pg\\_temp%'",
    [POSTGRES_SCHEMA_TABLE],
  );
  if (tables === undefined || tables.ours === 0) {
    return { applicationId: 0, userVersion: 0, objectCount: tables?.count ?? 0 };
  }
  const row = await database.get<{ application_id: number; version: number }>(
    `SELECT application_id, version FROM ${POSTGRES_SCHEMA_TABLE}`,
  );
  return {
    applicationId: row?.application_id ?? 0,
    userVersion: row?.version ?? 0,
    objectCount: tables.count,
  };
}

/**
 * `migrate` for PostgreSQL: one transaction under an advisory lock, so processes starting together on a
 * fresh database serialise and the later ones find nothing left to do. DDL is transactional there, so a
 * failed step leaves the database as it was.
 */
export async function migratePostgres(database: SqlDatabase): Promise<SchemaProblem | undefined> {
  return database.transaction(
    async (client) => {
      const state = await readPostgresSchemaState(client);
      const problem = findSchemaProblem(state);
      if (problem !== undefined) return problem;
      if (state.applicationId === 0) {
        await client.run(
          `CREATE TABLE ${POSTGRES_SCHEMA_TABLE} (application_id BIGINT NOT NULL, version BIGINT NOT NULL)`,
        );
        await client.run(`INSERT INTO ${POSTGRES_SCHEMA_TABLE} (application_id, version) VALUES (?, 0)`, [
          LEDGER_APPLICATION_ID,
        ]);
      }
      for (const step of MIGRATIONS) {
        if (step.version <= state.userVersion) continue;
        for (const statement of splitStatements(postgresSql(step))) await client.run(statement);
        await client.run(`UPDATE ${POSTGRES_SCHEMA_TABLE} SET version = ?`, [step.version]);
      }
      return undefined;
    },
    { lockKey: 'switchboard:migrate' },
  );
}

/**
 * A migration's statements one by one (a prepared statement holds one); our DDL has no `;` or `--` in
 * strings, and a function's `$$` body is one piece whatever `;` it holds.
 */
function splitStatements(sql: string): string[] {
  return (sql.replace(/--[^\n]*/g, '').match(/(?:\$\$[\s\S]*?\$\$|[^;$]|\$(?!\$))+/g) ?? [])
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}
