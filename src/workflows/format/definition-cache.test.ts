import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkflow } from './index.js';

// A process reads a workflow file once per content: what it runs must still follow every edit of the
// file, of a file it includes, and of the variables it reads.

function workflow(prompt: string): string {
  return `workflow:\n  name: cached\n  entry_point: ask\nagents:\n  - name: ask\n    prompt: ${prompt}\n    routes: [{ to: $end }]\n`;
}

function promptOf(file: string, env?: NodeJS.ProcessEnv): unknown {
  const step = loadWorkflow(file, env === undefined ? {} : { env }).steps.get('ask');
  return (step as { prompt?: unknown } | undefined)?.prompt;
}

describe('reading a workflow file again', () => {
  it('reuses the definition for the same bytes at the same path, and follows an edit at once', () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-definition-cache-'));
    const file = join(folder, 'flow.yaml');
    writeFileSync(file, workflow('first'));
    const first = loadWorkflow(file);
    expect(loadWorkflow(file)).toBe(first);
    writeFileSync(file, workflow('second'));
    expect(promptOf(file)).toBe('second');
    // The same bytes at another path are another file (relative paths resolve against it).
    const copy = join(folder, 'copy.yaml');
    writeFileSync(copy, workflow('second'));
    expect(loadWorkflow(copy).file).toBe(copy);
  });

  it('follows the variables a ${VAR} reads', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'switchboard-definition-cache-')), 'flow.yaml');
    writeFileSync(file, workflow('"hello ${WHO:-nobody}"'));
    expect(promptOf(file, {})).toBe('hello nobody');
    expect(promptOf(file, { WHO: 'ada' })).toBe('hello ada');
    expect(promptOf(file, { WHO: 'grace', OTHER: 'x' })).toBe('hello grace');
    expect(promptOf(file, {})).toBe('hello nobody');
  });

  it('follows an edit of a file it includes with !file', () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-definition-cache-'));
    const file = join(folder, 'flow.yaml');
    writeFileSync(join(folder, 'prompt.txt'), 'from the include');
    writeFileSync(file, workflow('!file prompt.txt'));
    expect(promptOf(file)).toBe('from the include');
    writeFileSync(join(folder, 'prompt.txt'), 'edited');
    expect(promptOf(file)).toBe('edited');
  });
});
