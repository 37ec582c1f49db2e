import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../src/store/ledger.js';

// A program that imports the library runs in its own folder; the built package is what it imports.
const library = join(import.meta.dirname, '../dist/index.js');
const skills = join(import.meta.dirname, 'fixtures/skills');

/** Routes one request from a fresh Node process whose working directory is `cwd`. */
function routeFromProgram(cwd: string, options: Record<string, unknown>): string {
  const program = `
    const { createRouter } = await import(${JSON.stringify(library)});
    const router = createRouter(${JSON.stringify({ skills, ...options })});
    const decision = await router.route('the app crashes whenever I save');
    await router.close();
    process.stdout.write(decision.skill);
  `;
  return execFileSync(process.execPath, ['--input-type=module', '-e', program], { cwd, encoding: 'utf8' });
}

describe('the library and the caller’s folder', () => {
  it('createRouter without a stateDir routes without creating ./.switchboard', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-library-'));
    expect(routeFromProgram(cwd, {})).toBe('fix-bug');
    expect(existsSync(join(cwd, '.switchboard'))).toBe(false);
  });

  it('with a stateDir it keeps the ledger and the model there', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-library-'));
    const stateDir = join(cwd, 'state');
    expect(routeFromProgram(cwd, { stateDir })).toBe('fix-bug');
    expect(existsSync(join(cwd, '.switchboard'))).toBe(false);
    expect(existsSync(join(stateDir, 'models'))).toBe(true);
    const ledger = openLedger({ stateDir });
    expect(await ledger.countRouteDecisions()).toBe(1);
    await ledger.close();
  });
});
