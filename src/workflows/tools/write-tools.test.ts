import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { onPath, SANDBOX_VARIABLE } from '../../confinement/sandbox.js';
import { FilePolicy } from './file-policy.js';
import { fileTools } from './file-tools.js';

// The tools that change a step's working directory on the API providers: write_file and edit_file
// through the one file policy, run_command in the sandbox, each against what a hostile model tries.

const temporary: string[] = [];
afterAll(() => {
  for (const folder of temporary) rmSync(folder, { recursive: true, force: true });
});
const sandboxSetting = process.env[SANDBOX_VARIABLE];
afterEach(() => {
  if (sandboxSetting === undefined) delete process.env[SANDBOX_VARIABLE];
  else process.env[SANDBOX_VARIABLE] = sandboxSetting;
});

const SECRET = 'heliotrope-planted-in-a-nested-env';

function workspace(): { root: string; work: string; tools: ReturnType<typeof fileTools> } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-write-tools-')));
  temporary.push(root);
  const work = join(root, 'work');
  mkdirSync(join(work, 'sub', '.aws'), { recursive: true });
  writeFileSync(join(work, 'sub', '.env'), `TOKEN=${SECRET}\n`);
  writeFileSync(join(work, 'sub', '.aws', 'credentials'), `key=${SECRET}\n`);
  writeFileSync(join(work, 'notes.txt'), 'one two\ntwo three\n');
  writeFileSync(join(root, 'outside.txt'), 'not yours\n');
  return { root, work, tools: fileTools(new FilePolicy(work, [])) };
}

const signal = new AbortController().signal;

describe('write_file and edit_file', () => {
  it('create and change files inside the working directory, folders included, and leave no temporary file', async () => {
    const { work, tools } = workspace();
    const created = await tools.write_file.run(
      { path: 'docs/design.md', content: '# Design\n\nDraft\n' },
      signal,
    );
    expect(created).toEqual({ content: 'created docs/design.md (3 lines)' });
    const edited = await tools.edit_file.run(
      { path: 'docs/design.md', old_string: 'Draft', new_string: 'Final' },
      signal,
    );
    expect(edited).toEqual({ content: 'edited docs/design.md: 1 replaced' });
    expect(readFileSync(join(work, 'docs', 'design.md'), 'utf8')).toBe('# Design\n\nFinal\n');
    expect(readdirSync(join(work, 'docs'))).toEqual(['design.md']);
  });

  it("write_file removes what a killed write of the same file left beside it, and keeps a running process's", async () => {
    const { work, tools } = workspace();
    const gone = spawnSync(process.execPath, ['-e', '0']).pid;
    const abandoned = `.notes.txt.${gone}.0123abcd.tmp`;
    const running = `.notes.txt.${process.pid}.4567cdef.tmp`;
    const other = `.other.txt.${gone}.89abcdef.tmp`;
    for (const name of [abandoned, running, other]) writeFileSync(join(work, name), 'half writ');
    expect(await tools.write_file.run({ path: 'notes.txt', content: 'whole\n' }, signal)).toEqual({
      content: 'replaced notes.txt (1 lines)',
    });
    const left = readdirSync(work);
    expect(left).not.toContain(abandoned);
    expect(left).toContain(running);
    expect(left).toContain(other);
  });

  it('edit_file refuses text that is missing or not unique, and replace_all replaces each', async () => {
    const { work, tools } = workspace();
    const missing = await tools.edit_file.run(
      { path: 'notes.txt', old_string: 'four', new_string: 'x' },
      signal,
    );
    expect(missing).toMatchObject({
      isError: true,
      content: expect.stringMatching(/"old_string" is not in the file/),
    });
    const twice = await tools.edit_file.run(
      { path: 'notes.txt', old_string: 'two', new_string: '2' },
      signal,
    );
    expect(twice).toMatchObject({
      isError: true,
      content: expect.stringMatching(/occurs 2 times.*replace_all/),
    });
    expect(readFileSync(join(work, 'notes.txt'), 'utf8')).toBe('one two\ntwo three\n');
    const all = await tools.edit_file.run(
      { path: 'notes.txt', old_string: 'two', new_string: '$&2', replace_all: true },
      signal,
    );
    expect(all).toEqual({ content: 'edited notes.txt: 2 replaced' });
    expect(readFileSync(join(work, 'notes.txt'), 'utf8')).toBe('one $&2\n$&2 three\n');
  });

  it('edit_file reads as read_file does: a FIFO is refused at once, never waited on', async () => {
    const { work, tools } = workspace();
    expect(spawnSync('mkfifo', [join(work, 'pipe')]).status).toBe(0);
    const edited = await tools.edit_file.run({ path: 'pipe', old_string: 'a', new_string: 'b' }, signal);
    expect(edited).toMatchObject({
      isError: true,
      content: expect.stringMatching(/pipe is not a regular file/),
    });
  });

  it('refuse what the deny list names and what lies outside, through a link too', async () => {
    const { root, work, tools } = workspace();
    symlinkSync(join(root, 'outside.txt'), join(work, 'link.txt'));
    symlinkSync(root, join(work, 'up'));
    const refused: Array<[string, Record<string, unknown>, RegExp]> = [
      ['write_file', { path: '.env', content: 'X=1' }, /\.env files hold secrets/],
      ['write_file', { path: 'sub/.env.local', content: 'X=1' }, /\.env files hold secrets/],
      ['write_file', { path: '../outside.txt', content: 'mine' }, /outside the working directory/],
      ['write_file', { path: join(root, 'outside.txt'), content: 'mine' }, /outside the working directory/],
      ['write_file', { path: 'link.txt', content: 'mine' }, /outside the working directory/],
      ['write_file', { path: 'up/new.txt', content: 'mine' }, /outside the working directory/],
      ['write_file', { path: '.git/hooks/pre-commit', content: 'mine' }, /git's own folders/],
      ['write_file', { path: 'sub', content: 'mine' }, /is a folder/],
      ['edit_file', { path: 'sub/.env', old_string: 'TOKEN', new_string: 'X' }, /\.env files hold secrets/],
      [
        'edit_file',
        { path: 'link.txt', old_string: 'not', new_string: 'now' },
        /outside the working directory/,
      ],
    ];
    for (const [tool, input, reason] of refused) {
      const outcome = await tools[tool as 'write_file'].run(input, signal);
      expect(outcome, JSON.stringify(input)).toMatchObject({
        isError: true,
        content: expect.stringMatching(reason),
      });
      expect(outcome.content).not.toContain(SECRET);
    }
    expect(readFileSync(join(root, 'outside.txt'), 'utf8')).toBe('not yours\n');
    expect(readdirSync(root).sort()).toEqual(['outside.txt', 'work']);
    expect(readFileSync(join(work, 'sub', '.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
  });
});

describe.skipIf(process.platform !== 'linux' || !onPath('bwrap'))('run_command', () => {
  it('runs in the working directory, may write there, and reads nothing of a nested .env or credentials', async () => {
    delete process.env[SANDBOX_VARIABLE];
    const { work, tools } = workspace();
    const ran = await tools.run_command.run(
      {
        command:
          'echo built > out.txt; cat sub/.env sub/.aws/credentials; ls -a sub; cat ~/.bashrc; echo done',
      },
      signal,
    );
    expect(ran.content).toMatch(/^exit code 0\n/);
    expect(ran.content).toContain('done');
    expect(ran.content).not.toContain(SECRET);
    expect(readFileSync(join(work, 'out.txt'), 'utf8')).toBe('built\n');
    // The masks hide the secret only inside the sandbox: the file itself is untouched.
    expect(readFileSync(join(work, 'sub', '.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
  });

  it('has no network unless the step says network: true', async () => {
    delete process.env[SANDBOX_VARIABLE];
    const server = createServer((_, response) => response.end('reached the server'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const command = `${JSON.stringify(process.execPath)} -e "fetch('http://127.0.0.1:${port}/').then((r) => r.text()).then(console.log, () => console.log('no connection'))"`;
      const { work } = workspace();
      const closed = await fileTools(new FilePolicy(work, [])).run_command.run({ command }, signal);
      expect(closed.content).toMatch(/^exit code 0\nno connection/);
      const open = await fileTools(new FilePolicy(work, []), { network: true }).run_command.run(
        { command },
        signal,
      );
      expect(open.content).toMatch(/^exit code 0\nreached the server/);
    } finally {
      server.close();
    }
  });

  it('stops a command at its timeout and cuts a long output, saying so', async () => {
    delete process.env[SANDBOX_VARIABLE];
    const { tools } = workspace();
    const slow = await tools.run_command.run({ command: 'sleep 30', timeout_seconds: 1 }, signal);
    expect(slow).toMatchObject({ isError: true, content: expect.stringMatching(/^timed out after 1 s/) });
    const long = await tools.run_command.run({ command: 'yes line | head -n 20000; exit 3' }, signal);
    expect(long).toMatchObject({ isError: true });
    expect(long.content).toMatch(/^exit code 3\n\[output cut: the first \d+ characters are not shown\]/);
    expect(long.content.length).toBeLessThan(31_000);
  });
});

describe('run_command without the sandbox', () => {
  it('is refused in one line naming the fix when bwrap is missing', async () => {
    const { work, tools } = workspace();
    const path = process.env['PATH'];
    process.env['PATH'] = '/nonexistent';
    delete process.env[SANDBOX_VARIABLE];
    try {
      const refused = await tools.run_command.run({ command: 'echo hi > made.txt' }, signal);
      expect(refused).toMatchObject({ isError: true });
      expect(refused.content).toMatch(/^run_command runs only in the sandbox, and .* install bubblewrap/);
      expect(refused.content.split('\n')).toHaveLength(1);
    } finally {
      process.env['PATH'] = path;
    }
    expect(readdirSync(work)).not.toContain('made.txt');
  });
});
