import { describe, expect, it } from 'vitest';
import { agentEnvironment, claudeCodeVariables } from './environment.js';

describe('agentEnvironment', () => {
  it("withholds every credential, Claude Code's API key included, keeping what the task names", () => {
    const parent = {
      PATH: '/usr/bin',
      HOME: '/home/me',
      ANTHROPIC_API_KEY: 'sk-ant-drop',
      CLAUDE_CONFIG_DIR: '/tmp/claude',
      OPENAI_API_KEY: 'sk-proj-drop',
      GEMINI_API_KEYS: 'a,b',
      AWS_SECRET_ACCESS_KEY: 'aws-drop',
      GITHUB_TOKEN: 'ghp-drop',
      NPM_TOKEN: 'npm-pass',
      DB_PASSWORD: 'hunter2',
      SWITCHBOARD_STATE_DIR: '/state',
      DATABASE_URL: 'postgres://app:hunter22@db:5432/app',
      REDIS_URL: 'redis://:hunter22@cache:6379',
      SWITCHBOARD_DATABASE_URL: 'postgres://me@127.0.0.1:5432/switchboard',
      API_URL: 'https://api.example.com/v1',
      DEPLOY_PAT: 'pat-drop',
      SENTRY_DSN: 'https://key@sentry.example/1',
      SWITCHBOARD_TEST_PG_PASS: '1',
      SSH_PRIVATE_KEY_PATH: '/keys/id',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-drop',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-honeycomb-team=hc-drop',
      PWD: '/work',
    };
    expect(agentEnvironment(parent, ['NPM_TOKEN'])).toEqual({
      PWD: '/work',
      SWITCHBOARD_TEST_PG_PASS: '1',
      PATH: '/usr/bin',
      HOME: '/home/me',
      CLAUDE_CONFIG_DIR: '/tmp/claude',
      NPM_TOKEN: 'npm-pass',
      SWITCHBOARD_STATE_DIR: '/state',
      API_URL: 'https://api.example.com/v1',
    });
  });

  it("never passes Switchboard's own credentials, even when asked to by name", () => {
    const parent = {
      ANTHROPIC_API_KEY: 'sk-ant-PLANTED-api',
      ANTHROPIC_AUTH_TOKEN: 'PLANTED-bearer',
      CLAUDE_CODE_OAUTH_TOKEN: 'PLANTED-oauth',
      OPENAI_API_KEY: 'sk-proj-PLANTED',
      GEMINI_API_KEY: 'PLANTED-gemini',
      GOOGLE_API_KEY: 'PLANTED-google',
      SWITCHBOARD_SERVER_TOKEN: 'PLANTED-server',
      SWITCHBOARD_DATABASE_URL: 'postgres://me@127.0.0.1:5432/switchboard',
      NPM_TOKEN: 'npm-pass',
    };
    expect(agentEnvironment(parent, Object.keys(parent))).toEqual({ NPM_TOKEN: 'npm-pass' });
  });

  it('keeps the cloud credentials Claude Code itself needs on Bedrock', () => {
    const parent = { CLAUDE_CODE_USE_BEDROCK: '1', AWS_SECRET_ACCESS_KEY: 'aws', OPENAI_API_KEY: 'x' };
    expect(agentEnvironment(parent)).toEqual({ CLAUDE_CODE_USE_BEDROCK: '1', AWS_SECRET_ACCESS_KEY: 'aws' });
  });

  it('gives Claude Code the credentials it can only read from its environment, but not its API key', () => {
    const parent = {
      ANTHROPIC_API_KEY: 'sk-ant-helper',
      ANTHROPIC_AUTH_TOKEN: 'gateway-token',
      CLAUDE_CODE_OAUTH_TOKEN: 'oauth-token',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1',
      OPENAI_API_KEY: 'sk-proj-drop',
    };
    expect(claudeCodeVariables(parent)).toEqual({
      ANTHROPIC_AUTH_TOKEN: 'gateway-token',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1',
      CLAUDE_CODE_OAUTH_TOKEN: 'oauth-token',
    });
  });
});
