import { describe, expect, it } from 'vitest';
import { agentEnvironment } from './environment.js';

describe('agentEnvironment', () => {
  it("withholds other providers' and cloud credentials, keeping Claude Code's own and what the task names", () => {
    const parent = {
      PATH: '/usr/bin',
      HOME: '/home/me',
      ANTHROPIC_API_KEY: 'sk-ant-keep',
      CLAUDE_CONFIG_DIR: '/tmp/claude',
      OPENAI_API_KEY: 'sk-proj-drop',
      GEMINI_API_KEYS: 'a,b',
      AWS_SECRET_ACCESS_KEY: 'aws-drop',
      GITHUB_TOKEN: 'ghp-drop',
      NPM_TOKEN: 'npm-pass',
      DB_PASSWORD: 'hunter2',
      SWITCHBOARD_STATE_DIR: '/state',
    };
    expect(agentEnvironment(parent, ['NPM_TOKEN'])).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/me',
      ANTHROPIC_API_KEY: 'sk-ant-keep',
      CLAUDE_CONFIG_DIR: '/tmp/claude',
      NPM_TOKEN: 'npm-pass',
      SWITCHBOARD_STATE_DIR: '/state',
    });
  });

  it('keeps the cloud credentials Claude Code itself needs on Bedrock', () => {
    const parent = { CLAUDE_CODE_USE_BEDROCK: '1', AWS_SECRET_ACCESS_KEY: 'aws', OPENAI_API_KEY: 'x' };
    expect(agentEnvironment(parent)).toEqual({ CLAUDE_CODE_USE_BEDROCK: '1', AWS_SECRET_ACCESS_KEY: 'aws' });
  });
});
