import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectMcpServer } from './mcp-client.js';

const SERVER = join(import.meta.dirname, '../../test/fixtures/mcp/environment-server.mjs');

describe('a stdio MCP server started by Switchboard', () => {
  it('inherits only PATH, HOME, the locale and the like, plus what its config names: an oddly named secret stays behind', async () => {
    const parent = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: '/home/someone',
      LC_ALL: 'C.UTF-8',
      MY_WEIRD_SECRET: 'do-not-pass-0123456789',
      SOME_SETTING: 'also not named',
    };
    const client = await connectMcpServer(
      { type: 'stdio', command: process.execPath, args: [SERVER], env: { NAMED_FOR_IT: 'given' } },
      { env: parent },
    );
    try {
      const answer = (await client.callTool({ name: 'environment', arguments: {} })) as {
        content: Array<{ text: string }>;
      };
      const names = answer.content[0]?.text.split('\n') ?? [];
      expect(names).toEqual(expect.arrayContaining(['HOME', 'LC_ALL', 'NAMED_FOR_IT', 'PATH']));
      expect(names).not.toContain('MY_WEIRD_SECRET');
      expect(names).not.toContain('SOME_SETTING');
    } finally {
      await client.close();
    }
  });
});
