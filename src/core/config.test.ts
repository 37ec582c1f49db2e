import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIDENCE_THRESHOLD, loadConfig } from './config.js';

function directoryWith(yaml?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-config-'));
  if (yaml !== undefined) writeFileSync(join(dir, 'switchboard.yaml'), yaml);
  return dir;
}

describe('loadConfig', () => {
  it('uses defaults when there is no file', () => {
    const cwd = directoryWith();
    const config = loadConfig({ cwd, env: {} });
    expect(config.route).toMatchObject({ mode: 'local', confidenceThreshold: DEFAULT_CONFIDENCE_THRESHOLD });
    expect(config.stateDir).toBe(join(cwd, '.switchboard'));
    expect(config.ledger).toEqual({ enabled: true, storeText: false });
  });

  it('refuses a ledger retention of 0, which would prune every route decision', () => {
    expect(() => loadConfig({ cwd: directoryWith('ledger:\n  retention: 0d\n'), env: {} })).toThrow(
      /longer than 0/,
    );
    expect(
      loadConfig({ cwd: directoryWith('ledger:\n  retention: 90d\n'), env: {} }).ledger.retentionMs,
    ).toBe(90 * 86_400_000);
  });

  it('layers file < environment < overrides and resolves paths against the file', () => {
    const cwd = directoryWith(
      'route:\n  skills: skills\n  mode: rules-only\n  confidence_threshold: 0.4\n  margin_threshold: 0.2\n',
    );
    const fromFile = loadConfig({ cwd, env: {} });
    expect(fromFile.route).toMatchObject({
      skills: join(cwd, 'skills'),
      mode: 'rules-only',
      confidenceThreshold: 0.4,
      marginThreshold: 0.2,
    });
    const env = { SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD: '0.6', SWITCHBOARD_ROUTE_MODE: 'local' };
    const fromEnv = loadConfig({ cwd, env });
    expect(fromEnv.route).toMatchObject({ confidenceThreshold: 0.6, mode: 'local', marginThreshold: 0.2 });
    const fromFlags = loadConfig({ cwd, env, overrides: { route: { confidenceThreshold: 0.7 } } });
    expect(fromFlags.route.confidenceThreshold).toBe(0.7);
  });

  it('reads Claude Code settings and lets SWITCHBOARD_CLAUDE_PATH override the executable', () => {
    const cwd = directoryWith(
      'claude:\n  executable: bin/claude\n  base_url: http://127.0.0.1:9\n  idle_timeout_seconds: 5\n',
    );
    expect(loadConfig({ cwd, env: {} }).claude).toEqual({
      executable: join(cwd, 'bin/claude'),
      baseUrl: 'http://127.0.0.1:9',
      idleTimeoutMs: 5000,
    });
    expect(loadConfig({ cwd, env: { SWITCHBOARD_CLAUDE_PATH: '/opt/claude' } }).claude.executable).toBe(
      '/opt/claude',
    );
  });

  it('reads the endpoints a spec may name, and refuses one that is not a plain base URL', () => {
    const cwd = directoryWith(
      'providers:\n  openai:\n    endpoints:\n      - url: http://127.0.0.1:11434/v1\n      - url: https://openrouter.ai/api/v1\n        api_key_env: OPENROUTER_API_KEY\n',
    );
    expect(loadConfig({ cwd, env: {} }).endpoints.openai).toEqual([
      { url: 'http://127.0.0.1:11434/v1' },
      { url: 'https://openrouter.ai/api/v1', apiKeyEnv: 'OPENROUTER_API_KEY' },
    ]);
    expect(loadConfig({ cwd: directoryWith(), env: {} }).endpoints.openai).toEqual([]);
    for (const url of ['http://user@127.0.0.1/v1', 'ftp://127.0.0.1/v1', '127.0.0.1:11434']) {
      const bad = directoryWith(`providers:\n  openai:\n    endpoints:\n      - url: ${url}\n`);
      expect(() => loadConfig({ cwd: bad, env: {} })).toThrow(/providers\.openai\.endpoints\.0\.url/);
    }
  });

  it('names the key and the problem in a bad file', () => {
    expect(() => loadConfig({ cwd: directoryWith('route:\n  confidence_threshold: 2\n'), env: {} })).toThrow(
      /route\.confidence_threshold/,
    );
    expect(() => loadConfig({ cwd: directoryWith('route:\n  mdoe: local\n'), env: {} })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(() => loadConfig({ cwd: directoryWith('route: [\n'), env: {} })).toThrow(/not valid YAML/);
  });

  it('rejects bad environment values and a missing --config file', () => {
    const cwd = directoryWith();
    expect(() => loadConfig({ cwd, env: { SWITCHBOARD_ROUTE_MARGIN_THRESHOLD: 'lots' } })).toThrow(
      /SWITCHBOARD_ROUTE_MARGIN_THRESHOLD=lots/,
    );
    expect(() => loadConfig({ cwd, env: { SWITCHBOARD_ROUTE_MODE: 'psychic' } })).toThrow(
      /not a routing mode/,
    );
    expect(() => loadConfig({ cwd, env: {}, configFile: 'nope.yaml' })).toThrow(/does not exist/);
  });

  it('takes a budget cap of 0 as "block these calls", and still refuses a negative one', () => {
    const blocked = directoryWith(
      'budgets:\n  rules:\n    - { provider: anthropic, daily_usd: 0, monthly_usd: 0 }\n',
    );
    expect(loadConfig({ cwd: blocked, env: {} }).call.budgetRules).toEqual([
      { provider: 'anthropic', dailyUsd: 0, monthlyUsd: 0 },
    ]);
    const negative = directoryWith('budgets:\n  rules:\n    - { daily_usd: -1 }\n');
    expect(() => loadConfig({ cwd: negative, env: {} })).toThrow(/daily_usd/);
  });

  it('reads call.breaker in milliseconds, and call.cooldown_seconds as the earlier name of its half-open wait', () => {
    const tuned = directoryWith(
      'call:\n  breaker:\n    failure_ratio: 0.25\n    minimum_requests: 40\n    window_seconds: 10\n' +
        '    half_open_after_seconds: 0.5\n    max_half_open_after_seconds: 8\n    probes: 1\n',
    );
    expect(loadConfig({ cwd: tuned, env: {} }).call.breaker).toEqual({
      failureRatio: 0.25,
      minimumRequests: 40,
      windowMs: 10_000,
      halfOpenAfterMs: 500,
      maxHalfOpenAfterMs: 8_000,
      probes: 1,
    });
    const earlier = directoryWith('call:\n  cooldown_seconds: 60\n');
    expect(loadConfig({ cwd: earlier, env: {} }).call.breaker).toEqual({ halfOpenAfterMs: 60_000 });
    const both = directoryWith('call:\n  cooldown_seconds: 60\n  breaker:\n    half_open_after_seconds: 5\n');
    expect(() => loadConfig({ cwd: both, env: {} })).toThrow(/not both/);
    const ratio = directoryWith('call:\n  breaker:\n    failure_ratio: 50\n');
    expect(() => loadConfig({ cwd: ratio, env: {} })).toThrow(/call\.breaker\.failure_ratio/);
    const failures = directoryWith('call:\n  breaker:\n    failures: 3\n');
    expect(() => loadConfig({ cwd: failures, env: {} })).toThrow(/failures/);
  });
});
