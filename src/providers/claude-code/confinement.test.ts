import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startConfinement } from './confinement.js';

// What a confined Claude Code process is started with: its environment is what its Bash inherits.

const cwd = mkdtempSync(join(tmpdir(), 'switchboard-confinement-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('startConfinement', () => {
  it("behind the forwarder, Claude Code's environment holds none of the user's Claude credentials", async () => {
    const tag = randomBytes(6).toString('hex');
    const planted = {
      ANTHROPIC_API_KEY: `sk-ant-PLANTED-${tag}-key`,
      ANTHROPIC_AUTH_TOKEN: `PLANTED-${tag}-bearer`,
      CLAUDE_CODE_OAUTH_TOKEN: `sk-ant-oat01-PLANTED-${tag}-oauth`,
    };
    const confinement = await startConfinement({ cwd, baseUrl: 'http://127.0.0.1:9', env: planted });
    try {
      const text = JSON.stringify(confinement);
      for (const value of Object.values(planted)) expect(text).not.toContain(value);
      expect(confinement.env['ANTHROPIC_BASE_URL']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await confinement.close();
    }
  });

  it('names a subscription login it could not keep from the tools, when no key puts a forwarder in front', async () => {
    const oauth = `sk-ant-oat01-PLANTED-${randomBytes(6).toString('hex')}-oauth`;
    const confinement = await startConfinement({
      cwd,
      env: { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', CLAUDE_CODE_OAUTH_TOKEN: oauth },
    });
    try {
      // The login mode keeps working (Claude Code needs the token), and the caller learns it is exposed.
      expect(confinement.env['CLAUDE_CODE_OAUTH_TOKEN']).toBe(oauth);
      expect(confinement.exposedCredentials).toEqual(['CLAUDE_CODE_OAUTH_TOKEN']);
    } finally {
      await confinement.close();
    }
  });
});
