import { createRequire } from 'node:module';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type Sqlite from 'better-sqlite3';
import type * as PromClient from 'prom-client';
import type * as Yaml from 'yaml';
import type * as Zod from 'zod';

// Dependencies that ship CommonJS, loaded with `require` by the synchronous functions that need them,
// at their first use: importing the library, or running a command that never reaches those functions,
// does not pay for their load time (YAML ~30 ms, zod ~50 ms, Ajv ~40 ms, prom-client ~45 ms, SQLite's
// native addon ~13 ms for a router without a ledger).
const requirePackage = createRequire(import.meta.url);

/** The `yaml` package. */
export function loadYaml(): typeof Yaml {
  return requirePackage('yaml') as typeof Yaml;
}

/** zod's `z`. */
export function loadZod(): typeof Zod.z {
  return (requirePackage('zod') as typeof Zod).z;
}

/** Ajv for JSON Schema draft 2020-12. */
export function loadAjv2020(): typeof Ajv2020Module.Ajv2020 {
  return (requirePackage('ajv/dist/2020.js') as typeof Ajv2020Module).Ajv2020;
}

/** better-sqlite3's Database class (a native addon). */
export function loadSqlite(): typeof Sqlite {
  return requirePackage('better-sqlite3') as typeof Sqlite;
}

/** prom-client. */
export function loadPromClient(): typeof PromClient {
  return requirePackage('prom-client') as typeof PromClient;
}
