import { describe, expect, it } from 'vitest';
import { gitAuthEnvironment } from './pull-request.js';

describe('gitAuthEnvironment', () => {
  const token = 'ghp_unitTestToken0123456789';

  it('gives git the token as a header for an https remote on the GitHub host only', () => {
    const env = gitAuthEnvironment('https://github.com/acme/widgets.git', token, 'https://api.github.com');
    expect(env['GIT_CONFIG_KEY_0']).toBe('http.https://github.com/.extraheader');
    expect(env['GIT_CONFIG_VALUE_0']).toBe(
      `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    );
    expect(JSON.stringify(env)).not.toContain(token);
  });

  it('never sends the token to another host, over http, or over ssh', () => {
    const api = 'https://api.github.com';
    expect(gitAuthEnvironment('https://gitlab.example/acme/widgets.git', token, api)).toEqual({});
    expect(gitAuthEnvironment('http://github.com/acme/widgets.git', token, api)).toEqual({});
    expect(gitAuthEnvironment('git@github.com:acme/widgets.git', token, api)).toEqual({});
    expect(gitAuthEnvironment('https://github.com/acme/widgets.git', undefined, api)).toEqual({});
  });

  it('uses the GitHub Enterprise host that GITHUB_API_URL names', () => {
    const env = gitAuthEnvironment(
      'https://git.corp.example/a/b.git',
      token,
      'https://git.corp.example/api/v3',
    );
    expect(env['GIT_CONFIG_KEY_0']).toBe('http.https://git.corp.example/.extraheader');
  });
});
