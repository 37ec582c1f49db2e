import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSwitchboardError, type SwitchboardError } from '../../core/errors.js';
import type { AgentStep, ForEachGroup, HumanGateStep, ScriptStep } from '../model.js';
import { loadWorkflow, parseWorkflow, validateWorkflow } from './index.js';

const fixtures = resolve(import.meta.dirname, '../../../test/fixtures/workflows');
const inline = resolve(fixtures, 'inline.yaml');

function failure(run: () => unknown): SwitchboardError {
  try {
    run();
  } catch (error) {
    if (isSwitchboardError(error)) return error as SwitchboardError;
    throw error;
  }
  throw new Error('expected a WORKFLOW_INVALID error');
}

/** A valid two-step workflow with `extra` YAML lines spliced into the second step (`check`). */
function withStep(extra: string, type = 'script', more = ''): string {
  return [
    'workflow:',
    '  name: t',
    '  entry_point: first',
    'agents:',
    '  - name: first',
    '    prompt: hi',
    '    routes: [{ to: check }]',
    '  - name: check',
    `    type: ${type}`,
    ...extra.split('\n').map((line) => `    ${line}`),
    more,
  ].join('\n');
}

describe('loadWorkflow: Conductor files and Switchboard additions', () => {
  it('reads every key family into the model, with !file, ${VAR:-default} and the file hash', () => {
    const file = resolve(fixtures, 'every-key.yaml');
    const workflow = loadWorkflow(file, { env: {} });
    expect(workflow.warnings).toEqual([]);
    expect(workflow.hash).toBe(createHash('sha256').update(readFileSync(file)).digest('hex'));
    expect(workflow).toMatchObject({
      file,
      dir: fixtures,
      name: 'every-key',
      version: '1.2',
      entryPoint: 'intake',
      runKey: 'topic-{{ workflow.input.topic }}',
      contextMode: 'accumulate',
      limits: { maxIterations: 40, timeoutSeconds: 600, budgetUsd: 2.5, budgetMode: 'enforce' },
      metadata: { owner: 'docs-team' },
      runtime: {
        provider: 'claude',
        defaultModel: 'claude-haiku-4.5',
        temperature: 0.2,
        maxTokens: 2000,
        maxAgentIterations: 30,
        workingDir: '/tmp/every-key',
      },
      output: { title: '{{ drafter.output.title }}' },
    });
    expect(workflow.input['rounds']).toEqual({ type: 'number', required: false, default: 2 });
    expect(workflow.input['topic']).toMatchObject({ type: 'string', required: true });
    expect(workflow.runtime.mcpServers['search']).toMatchObject({
      type: 'http',
      url: 'http://127.0.0.1:9999/mcp',
      tools: ['lookup'],
    });
    expect(workflow.runtime.mcpServers['files']).toMatchObject({
      type: 'stdio',
      command: 'npx',
      tools: ['*'],
    });
    expect([...workflow.steps.values()].map((step) => step.type)).toEqual([
      'route',
      'agent',
      'agent',
      'human_gate',
      'agent',
      'agent',
      'script',
      'set',
      'set',
      'wait',
      'workflow',
      'agent',
      'terminate',
    ]);
    const drafter = workflow.steps.get('drafter') as AgentStep;
    expect(drafter).toMatchObject({
      provider: 'claude-agent-sdk',
      model: 'claude-sonnet-4.5',
      input: ['workflow.input.topic', 'reviewer.output?'],
      mcp: ['files'],
      outputMode: 'envelope',
      retry: {
        maxAttempts: 3,
        backoff: 'fixed',
        delaySeconds: 1,
        retryOn: ['provider_error'],
        maxParseRecoveryAttempts: 2,
      },
      timeoutSeconds: 120,
      validator: { criteria: 'Every section has a heading.\n', maxRetries: 1 },
      maxAgentIterations: 12,
      maxVisits: 3,
      onCap: 'approval',
    });
    expect(drafter.output?.['title']).toMatchObject({
      type: 'string',
      minLength: 3,
      pattern: '^[A-Z]',
      required: true,
      nullable: false,
    });
    expect(drafter.output?.['sections']?.items?.properties?.['note']).toMatchObject({
      required: false,
      nullable: true,
    });
    const reviewer = workflow.steps.get('reviewer') as AgentStep;
    expect(reviewer.prompt).toBe('Summarise the findings for {{ workflow.input.topic }}.\n');
    expect(reviewer.validator).toEqual({
      criteria: 'Every note names the sentence it is about.',
      model: 'gpt-4.1-mini',
      maxRetries: 0,
    });
    expect(reviewer.output?.['verdict']).toMatchObject({ type: 'string', enum: ['approve', 'revise'] });
    expect(reviewer.routes[0]).toEqual({
      to: 'drafter',
      when: "{{ reviewer.output.verdict == 'revise' }}",
      output: { reason: "{{ reviewer.output.notes | join(', ') }}" },
    });
    expect(workflow.steps.get('approval') as HumanGateStep).toMatchObject({
      timeoutSeconds: 3600,
      default: 'ship',
      options: [
        { label: 'Ship it', value: 'ship', route: 'fanout', multiline: false },
        { label: 'Rework', value: 'rework', route: 'drafter', promptFor: 'feedback', multiline: true },
      ],
    });
    expect(workflow.steps.get('lister') as ScriptStep).toMatchObject({
      command: 'python3',
      env: { LANG: 'C' },
      timeoutSeconds: 30,
      output: {},
    });
    expect(workflow.steps.get('counter')).toMatchObject({ type: 'set', outputType: 'integer' });
    expect(workflow.steps.get('pair')).toMatchObject({ values: { a: '1' }, outputType: 'auto' });
    expect(workflow.steps.get('pause')).toMatchObject({ duration: '1.5s', reason: 'let the index settle' });
    expect(workflow.steps.get('child')).toMatchObject({ workflow: './child.yaml', maxDepth: 2 });
    expect(workflow.steps.get('intake')).toMatchObject({ skills: './skills', mode: 'local' });
    expect((workflow.steps.get('implement') as AgentStep).git).toEqual({
      repo: '{{ workflow.dir }}',
      base: 'main',
      setup: 'npm ci',
      verify: 'npm test',
      merge: 'no-ff',
      limits: { max_turns: 20, max_cost_usd: 1.5, max_attempts: 2 },
      acceptance: ['tests pass'],
    });
    expect(workflow.steps.get('failed')).toMatchObject({
      status: 'failed',
      outputTemplate: { stage: 'listing' },
    });
    expect(workflow.groups.get('fanout')).toMatchObject({
      kind: 'parallel',
      agents: ['fact_a', 'fact_b'],
      failureMode: 'continue_on_error',
      maxVisits: 2,
    });
    const perItem = workflow.groups.get('per_item') as ForEachGroup;
    expect(perItem).toMatchObject({
      kind: 'for_each',
      source: 'lister.output.items',
      as: 'entry',
      keyBy: 'entry.id',
      maxConcurrent: 4,
      failureMode: 'all_or_nothing',
    });
    expect(perItem.agent).toMatchObject({ name: 'handle_item', type: 'agent' });
  });

  it('substitutes ${VAR} from the environment', () => {
    const workflow = loadWorkflow(resolve(fixtures, 'every-key.yaml'), {
      env: { EVERY_KEY_DIR: '/srv/work' },
    });
    expect(workflow.runtime.workingDir).toBe('/srv/work');
  });

  it('loads Conductor keys Switchboard does not act on, with one warning per key naming its path', () => {
    const workflow = loadWorkflow(resolve(fixtures, 'conductor-extras.yaml'));
    const warnings = workflow.warnings;
    for (const key of [
      'context.max_tokens',
      'context.trim_strategy',
      'cost',
      'hooks',
      'instructions',
      'runtime.timeout',
      'runtime.checkpoint',
      'runtime.plugins',
      'runtime.skill_discovery',
      'runtime.mcp_servers.slow.timeout',
    ]) {
      expect(warnings.filter((line) => line.startsWith(`workflow: ${key} `))).toHaveLength(1);
    }
    for (const key of ['context_tier', 'max_session_seconds', 'dialog', 'sandbox', 'skills', 'plugins']) {
      expect(warnings).toContainEqual(
        expect.stringMatching(
          new RegExp(`^agents\\[0\\] "analyst": ${key} is not supported by Switchboard; ignored`),
        ),
      );
    }
    expect(warnings).toContain('agents[0] "analyst": command is not read by agent steps; ignored');
    expect(warnings).toContainEqual(
      expect.stringContaining('--provider-map copilot=openai@http://127.0.0.1:11434/v1'),
    );
    expect(warnings.join('\n')).not.toContain('not-a-real-key');
    // validator: is supported: it loads without a warning.
    expect(warnings.join('\n')).not.toContain('validator');
    expect(workflow.contextMode).toBe('explicit');
    // reasoning:, runtime.default_reasoning_effort and session_key are supported: read, no warning.
    expect(warnings.join('\n')).not.toContain('reasoning');
    expect(warnings.join('\n')).not.toContain('session_key');
    expect(workflow.runtime.defaultReasoningEffort).toBe('high');
    expect(workflow.steps.get('analyst')).toMatchObject({ reasoning: 'high' });
    expect(warnings).toHaveLength(24);
  });
});

describe('loadWorkflow: one-line errors naming file, step and field', () => {
  const cases: Array<[string, string, RegExp, RegExp]> = [
    [
      'malformed YAML',
      'workflow:\n  name: [a\n  entry_point: b\n',
      /^\S+inline\.yaml:3:\d+: not valid YAML/,
      /fix the YAML/,
    ],
    [
      'an unknown key in a step',
      withStep('command: ls\npromt: hi'),
      /inline\.yaml:11:\d+: agents\[1\] "check": field "promt": unknown key "promt"$/,
      /remove it or fix its spelling/,
    ],
    [
      'an unknown top-level key',
      `${withStep('command: ls')}\nagentz: []`,
      /inline\.yaml:\d+:\d+: field "agentz": unknown key "agentz"$/,
      /remove it/,
    ],
    [
      'an unknown step type',
      withStep('command: ls', 'shell'),
      /agents\[1\] "check": field "type": "shell" is not valid; must be one of: agent, human_gate/,
      /write one of the values listed for type/,
    ],
    [
      'a questions step with options',
      withStep('questions: [{ text: why? }]\noptions: [{ label: A, value: a, route: $end }]', 'questions'),
      /agents\[1\] "check": field "options": questions steps cannot have "options"$/,
      /per-question choices go in questions\[\]\.choices/,
    ],
    [
      'a field the type forbids',
      withStep('command: ls\nprompt: hi'),
      /agents\[1\] "check": field "prompt": script steps cannot have "prompt"$/,
      /belongs on type: agent/,
    ],
    [
      'timeout_seconds on a script',
      withStep('command: ls\ntimeout_seconds: 5'),
      /field "timeout_seconds": script steps cannot have "timeout_seconds"/,
      /takes "timeout"/,
    ],
    [
      'routes on a terminate step',
      withStep('status: failed\nreason: no\nroutes: [{ to: first }]', 'terminate'),
      /field "routes": terminate steps cannot have "routes"/,
      /ends the run/,
    ],
    [
      'a set step with value and values',
      withStep('value: "1"\nvalues: { a: "2" }', 'set'),
      /field "value": a set step needs exactly one of "value" or "values"/,
      /value:/,
    ],
    [
      'a script without command',
      withStep('args: [x]'),
      /field "command": a script step needs "command"/,
      /add command:/,
    ],
    [
      'a route to nowhere',
      withStep('command: ls\nroutes: [{ to: nowhere }]'),
      /inline\.yaml:\d+:\d+: agents\[1\] "check": field "routes\[0\]\.to": "nowhere" is not a step, a group or \$end$/,
      /route to one of: first, check, \$end/,
    ],
    [
      'a gate option to nowhere',
      withStep('prompt: ok?\noptions: [{ label: Y, value: y, route: gone }]', 'human_gate'),
      /field "options\[0\]\.route": "gone" is not a step/,
      /route to one of/,
    ],
    [
      'on_cap to nowhere',
      withStep('command: ls\nmax_visits: 2\non_cap: gone'),
      /field "on_cap": "gone" is not a step/,
      /route to one of/,
    ],
    [
      'a gate default without timeout',
      withStep('prompt: ok?\ndefault: y\noptions: [{ label: Y, value: y, route: $end }]', 'human_gate'),
      /field "default": "default" only applies with "timeout"/,
      /add timeout:/,
    ],
    [
      'a gate default that is no option',
      withStep(
        'prompt: ok?\ntimeout: 60\ndefault: n\noptions: [{ label: Y, value: y, route: $end }]',
        'human_gate',
      ),
      /field "default": default "n" is not one of the options' values/,
      /use one of: y/,
    ],
    [
      'git fields without effects: git',
      withStep('prompt: do it\nverify: npm test', 'agent'),
      /field "verify": "verify" needs effects: git/,
      /add effects: git/,
    ],
    [
      'a validator on a human_gate',
      withStep(
        'prompt: ok?\noptions: [{ label: Y, value: y, route: $end }]\nvalidator: { criteria: be right }',
        'human_gate',
      ),
      /field "validator": human_gate steps cannot have "validator"$/,
      /belongs on type: agent/,
    ],
    [
      'a validator on an effects: git step',
      withStep('prompt: do it\neffects: git\nvalidator: { criteria: tests pass }', 'agent'),
      /field "validator": effects: git steps cannot have "validator"$/,
      /verify:/,
    ],
    [
      'a validator with blank criteria',
      withStep('prompt: do it\nvalidator: { criteria: "  " }', 'agent'),
      /field "validator": validator "criteria" is empty$/,
      /write criteria:/,
    ],
    [
      'a validator that re-runs twice',
      withStep('prompt: do it\nvalidator: { criteria: be right, max_retries: 2 }', 'agent'),
      /field "validator\.max_retries"/,
      /max_retries/,
    ],
    [
      'effects on a script',
      withStep('command: ls\neffects: git'),
      /field "effects": script steps cannot have "effects"/,
      /type: agent/,
    ],
    [
      'an unknown mcp server',
      withStep('prompt: do it\nmcp: [files]', 'agent'),
      /field "mcp\[0\]": "files" is not in runtime\.mcp_servers/,
      /declare it under workflow\.runtime\.mcp_servers/,
    ],
    [
      'an optional top-level output field',
      withStep('prompt: do it\noutput: { a: { type: string, required: false } }', 'agent'),
      /field "output\.a": a top-level output field cannot be optional/,
      /properties/,
    ],
    [
      'a wrong value type',
      withStep('command: ls\ntimeout: soon'),
      /field "timeout": expected number, received string/,
      /give timeout a number value/,
    ],
    [
      'a missing environment variable',
      withStep('command: ${NOT_SET_ANYWHERE}'),
      /inline\.yaml:10:\d+: agents\[1\] "check": field "command": environment variable NOT_SET_ANYWHERE is not set$/,
      /NOT_SET_ANYWHERE:-default/,
    ],
    [
      'a missing !file',
      withStep('command: !file missing.sh'),
      /!file missing\.sh: cannot read/,
      /relative to the YAML file/,
    ],
    [
      'a wait that is not a duration',
      withStep('duration: soon', 'wait'),
      /field "duration": "soon" is not a duration/,
      /500ms, 60s/,
    ],
    [
      'a skills folder on an agent',
      withStep('prompt: x\nskills: ./skills', 'agent'),
      /field "skills": a skills folder \(a string\) is only read by type: route steps/,
      /type: route/,
    ],
    [
      'a missing workflow name',
      'workflow:\n  entry_point: a\nagents:\n  - name: a\n    prompt: x\n',
      /inline\.yaml:\d+:\d+: workflow: field "name": is required$/,
      /give name a string value/,
    ],
    [
      'an entry_point that is no step',
      'workflow:\n  name: t\n  entry_point: b\nagents:\n  - name: a\n    prompt: x\n',
      /workflow: field "entry_point": entry_point "b" is not a step or group/,
      /start at one of: a/,
    ],
    [
      'a for_each with a script inside',
      'workflow:\n  name: t\n  entry_point: a\nagents:\n  - name: a\n    prompt: x\n    routes: [{ to: each }]\nfor_each:\n  - name: each\n    type: for_each\n    source: a.output.items\n    as: it\n    agent: { name: run, type: script, command: ls }\n',
      /for_each\[0\] "each": field "agent\.type": a script step cannot be the inline agent/,
      /routes instead/,
    ],
    [
      'a parallel member that does not exist',
      'workflow:\n  name: t\n  entry_point: both\nagents:\n  - name: first\n    prompt: x\nparallel:\n  - name: both\n    agents: [first, ghost]\n',
      /parallel\[0\] "both": field "agents\[1\]": "ghost" is not a step in agents:/,
      /use one of: first$/,
    ],
    [
      'an input reference to no step',
      withStep('command: ls', 'script', '    input: [ghost.output]'),
      /field "input\[0\]": "ghost" is not a step or group/,
      /name one of: first, check/,
    ],
    [
      'an input reference to an undeclared workflow input',
      withStep('command: ls', 'script', '    input: [workflow.input.topic]'),
      /field "input\[0\]": "workflow\.input\.topic" is not a declared workflow input/,
      /declare it under workflow\.input/,
    ],
    [
      'an agents entry that is not a mapping',
      'workflow:\n  name: t\n  entry_point: a\nagents:\n  - just-a-name\n',
      /inline\.yaml:5:5: agents\[0\]: must be a mapping \(name:, prompt:, …\)$/,
      /write agents entry 0 as a mapping/,
    ],
    [
      'a field of the wrong shape',
      withStep('prompt: x\neffects: git\nacceptance: 3', 'agent'),
      /field "acceptance": must be a string or a list of strings$/,
      /fix acceptance/,
    ],
    [
      'a parallel member with routes',
      'workflow:\n  name: t\n  entry_point: both\nagents:\n  - name: a\n    prompt: x\n    routes: [{ to: $end }]\n  - name: b\n    prompt: y\nparallel:\n  - name: both\n    agents: [a, b]\n',
      /parallel\[0\] "both": field "agents\[0\]": "a" has routes/,
      /move the routes to the group/,
    ],
    [
      'an input default of the wrong type',
      'workflow:\n  name: t\n  entry_point: a\n  input:\n    n: { type: number, default: "two" }\nagents:\n  - name: a\n    prompt: x\n',
      /workflow: field "input\.n\.default": the default of input "n" is not a number/,
      /number default/,
    ],
  ];

  it.each(cases)('%s', (_name, text, message, hint) => {
    const error = failure(() => parseWorkflow(text, inline, { env: {} }));
    expect(error.code).toBe('WORKFLOW_INVALID');
    expect(error.message).not.toContain('\n');
    expect(error.message.startsWith(inline)).toBe(true);
    expect(error.message).toMatch(message);
    expect(error.hint ?? '').toMatch(hint);
    expect(error.hint ?? '').not.toContain('\n');
    expect(error.details?.['file']).toBe(inline);
  });

  it('puts the step and field in details for --json readers', () => {
    const error = failure(() => parseWorkflow(withStep('command: ls\nprompt: hi'), inline));
    expect(error.details).toMatchObject({ file: inline, step: 'agents[1] "check"', field: 'prompt' });
  });

  it('names a file that does not exist', () => {
    const error = failure(() => loadWorkflow(resolve(fixtures, 'nope.yaml')));
    expect(error.message).toMatch(/nope\.yaml: no such workflow file$/);
    expect(error.hint).toBe('check the path');
  });
});

describe('validateWorkflow', () => {
  it('reports templates that read ahead, unreachable steps and loops without max_visits', () => {
    const report = validateWorkflow(loadWorkflow(resolve(fixtures, 'loops.yaml')));
    expect(report.errors).toEqual([
      {
        step: 'polish',
        field: 'prompt',
        message: 'prompt reads "publish", which cannot have run before "polish"',
      },
    ]);
    expect(report.warnings).toEqual([
      { step: 'orphan', message: 'no route leads to "orphan"; it never runs' },
      {
        step: 'draft',
        message:
          'the loop draft -> review -> draft has no max_visits; it only ends at limits.max_iterations 12',
      },
    ]);
  });

  it('finds nothing to report in a well-formed workflow', () => {
    expect(validateWorkflow(loadWorkflow(resolve(fixtures, 'every-key.yaml'), { env: {} }))).toEqual({
      errors: [],
      warnings: [],
    });
  });

  it('reports route targets that do not exist in a definition built by hand', () => {
    const workflow = loadWorkflow(resolve(fixtures, 'child.yaml'));
    workflow.steps.get('echo')?.routes.push({ to: 'gone' });
    expect(validateWorkflow(workflow).errors).toEqual([
      { step: 'echo', field: 'routes[0].to', message: '"gone" is not a step, a group or $end' },
    ]);
  });

  it('reports a sub-workflow file that is not there and an LLM step with only a system prompt', () => {
    const workflow = parseWorkflow(
      'workflow:\n  name: t\n  entry_point: a\nagents:\n  - name: a\n    system_prompt: You help.\n    routes: [{ to: b }]\n  - name: b\n    type: workflow\n    workflow: ./missing-child.yaml\n',
      inline,
    );
    expect(validateWorkflow(workflow)).toEqual({
      errors: [
        {
          step: 'b',
          field: 'workflow',
          message: `the sub-workflow ./missing-child.yaml does not exist (relative to ${fixtures})`,
        },
      ],
      warnings: [
        {
          step: 'a',
          field: 'prompt',
          message:
            'system_prompt is set but prompt is empty; put the task (and its input references) in prompt',
        },
      ],
    });
  });

  it('warns of a bare read of a step a route can skip, and not of one every path runs or a guard covers', () => {
    // write -> review -> (write again | ship): on write's first visit review has not run.
    const workflow = parseWorkflow(
      `workflow:
  name: t
  entry_point: plan
agents:
  - name: plan
    type: set
    value: p
    routes: [{ to: write }]
  - name: write
    type: set
    value: "{{ plan.output }} {{ review.output.notes }} {% if review is defined %}{{ write.output }}{% endif %}"
    routes: [{ to: review }]
  - name: review
    type: set
    values: { notes: n, ok: "true" }
    max_visits: 3
    routes:
      - { to: ship, when: "{{ review.output.ok }}" }
      - { to: write }
  - name: ship
    type: set
    value: "{{ plan.output }} {{ write.output }} {{ review.output.notes }}"
`,
      inline,
    );
    expect(validateWorkflow(workflow)).toEqual({
      errors: [],
      warnings: [
        {
          step: 'write',
          field: 'value',
          message:
            'value reads "review", which may not have run before "write" (a route can skip it): guard it with | default(…) or {% if review is defined %}',
        },
      ],
    });
  });

  it("checks the workflow's output: against every path that ends the run, an either-or branch included", () => {
    // pick -> (left | right) -> $end; a terminate that fails renders no output: at all.
    const workflow = parseWorkflow(
      `workflow:
  name: t
  entry_point: pick
agents:
  - name: pick
    type: set
    value: p
    routes:
      - { to: left, when: "{{ pick.output == 'l' }}" }
      - { to: stop, when: "{{ pick.output == 's' }}" }
      - { to: right }
  - name: left
    type: set
    value: l
    routes: [{ to: $end }]
  - name: right
    type: set
    value: r
  - name: stop
    type: terminate
    status: failed
    reason: stopped
output:
  picked: "{{ pick.output }}"
  either: "{% if left is defined %}{{ left.output }}{% else %}{{ right.output }}{% endif %}"
  bare: "{{ right.output }}"
  guarded: "{{ right.output | default('') }}"
`,
      inline,
    );
    expect(validateWorkflow(workflow)).toEqual({
      errors: [],
      warnings: [
        {
          step: 'workflow',
          field: 'output.bare',
          message:
            'output.bare reads "right", which may not have run when the run ends (a route can skip it): guard it with | default(…) or {% if right is defined %}',
        },
      ],
    });
  });

  it("passes the loader's warnings on", () => {
    const report = validateWorkflow(loadWorkflow(resolve(fixtures, 'conductor-extras.yaml')));
    expect(report.warnings.length).toBeGreaterThanOrEqual(24);
    expect(report.warnings[0]?.message).toMatch(/^workflow: context\.max_tokens/);
  });
});
