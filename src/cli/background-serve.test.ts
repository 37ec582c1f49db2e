import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backgroundServeEnabled, settingsFingerprint, stateFolderKnown } from './background-serve.js';

describe('backgroundServeEnabled', () => {
  it('is on by default, off with SWITCHBOARD_BACKGROUND_SERVE=0, off under CI unless set to 1', () => {
    expect(backgroundServeEnabled({})).toBe(true);
    expect(backgroundServeEnabled({ SWITCHBOARD_BACKGROUND_SERVE: '0' })).toBe(false);
    expect(backgroundServeEnabled({ CI: 'true' })).toBe(false);
    expect(backgroundServeEnabled({ CI: 'false' })).toBe(true);
    expect(backgroundServeEnabled({ CI: 'true', SWITCHBOARD_BACKGROUND_SERVE: '1' })).toBe(true);
    // Inside an agent run nothing may outlive the run.
    expect(
      backgroundServeEnabled({
        SWITCHBOARD_AGENT_TAG: 'switchboard-run-1',
        SWITCHBOARD_BACKGROUND_SERVE: '1',
      }),
    ).toBe(false);
  });
});

describe('settingsFingerprint', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-fingerprint-'));
  const base = { stateDir: join(cwd, 'state'), cwd, serveArgs: ['--skills', '/skills'], environment: {} };

  it('is the same for the same settings whatever the per-client variables', () => {
    expect(settingsFingerprint({ ...base, environment: { SWITCHBOARD_DEBUG: '1', TERM: 'xterm' } })).toBe(
      settingsFingerprint(base),
    );
  });

  it('differs with the skills, the keys, the working folder or an edited config file', () => {
    const fingerprint = settingsFingerprint(base);
    expect(settingsFingerprint({ ...base, serveArgs: ['--skills', '/other'] })).not.toBe(fingerprint);
    expect(settingsFingerprint({ ...base, environment: { ANTHROPIC_API_KEY: 'sk-ant-x' } })).not.toBe(
      fingerprint,
    );
    expect(settingsFingerprint({ ...base, cwd: tmpdir() })).not.toBe(fingerprint);
    // Where traces go, with which credentials, and whether prompts go with them: a server of its own.
    for (const name of [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
    ]) {
      expect(settingsFingerprint({ ...base, environment: { [name]: 'x' } }), name).not.toBe(fingerprint);
    }
    writeFileSync(join(cwd, 'switchboard.yaml'), 'route: {}\n');
    expect(settingsFingerprint(base)).not.toBe(fingerprint);
  });

  it('leaves a config file that sets state_dir to the in-process path unless the folder was given', () => {
    writeFileSync(join(cwd, 'switchboard.yaml'), 'state_dir: elsewhere\n');
    expect(stateFolderKnown(base, false)).toBe(false);
    expect(stateFolderKnown(base, true)).toBe(true);
  });
});
