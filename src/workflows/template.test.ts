import { describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import {
  coerceJson,
  evaluateCondition,
  evaluateValue,
  renderTemplate,
  templateNames,
  templateReferences,
} from './template.js';

const where = { file: 'flow.yaml', step: 'summarize', field: 'prompt' };
const scope = {
  workflow: { input: { topic: 'tea', empty: '' }, name: 'demo' },
  finder: { output: { items: ['a', 'b'], count: 2, nothing: null, approved: true } },
  group: { outputs: [{ score: 3 }, { score: 5 }], errors: { '1': { message: 'broke', code: 'TIMEOUT' } } },
};

function failure(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isSwitchboardError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected a template error');
}

describe('renderTemplate (Jinja2 with Conductor rules)', () => {
  it('renders loops, conditions, filters, tests and dict items as Jinja2 does', () => {
    const source = [
      '{% for item in finder.output.items %}{{ loop.index }}.{{ item | upper }} {% endfor %}',
      '{% if workflow.input.missing is defined %}yes{% else %}no{% endif %}',
      '{{ workflow.input.missing | default("fallback") }} {{ finder.output.nothing | default("none-replaced") }}',
      '{{ group.outputs | map(attribute="score") | join(",") }} {{ group.outputs | length }}',
      '{% for index, error in group.errors.items() %}[{{ index }}:{{ error.message }}]{% endfor %}',
      '{{ finder.output.items | tojson }} {{ group.outputs | map(attribute="score") | sum }}',
    ].join('|');
    expect(renderTemplate(source, scope, where)).toBe(
      '1.A 2.B |no|fallback none-replaced|3,5 2|[1:broke]|["a", "b"] 8',
    );
  });

  it('formats the json filter as indented JSON, as Conductor registers it', () => {
    expect(renderTemplate('{{ finder.output.items | json }}', scope, where)).toBe('[\n  "a",\n  "b"\n]');
  });

  it('makes an undefined name an error naming file, step, field and the name', () => {
    expect(failure(() => renderTemplate('Hi {{ planer.output.x }}', scope, where))).toBe(
      'WORKFLOW_TEMPLATE: flow.yaml: step "summarize" field "prompt": "planer" is undefined',
    );
    expect(failure(() => renderTemplate('{{ finder.output.missing }}', scope, where))).toContain(
      '"finder.output.missing" is undefined',
    );
  });

  it('lets default and is defined guard a step that has not run, its fields included; a bare read still fails', () => {
    const guarded = [
      "{{ skipped.output.z | default('none') }}",
      '{{ skipped.output.z is defined }}',
      "{{ finder.output.nothing.deeper | d('null-safe') }}",
      "{{ skipped.output.z if skipped is defined else 'else' }}",
      '{% if skipped is defined and skipped.output.z %}yes{% else %}no{% endif %}',
    ].join('|');
    expect(renderTemplate(guarded, scope, where)).toBe('none|false|null-safe|else|no');
    expect(failure(() => renderTemplate('{{ skipped.output.z }}', scope, where))).toContain(
      '"skipped" is undefined',
    );
    // The guard covers its operand only, not what the value is then used for.
    expect(
      failure(() => renderTemplate("{{ (skipped.output.z | default('')) ~ other.output }}", scope, where)),
    ).toContain('"other" is undefined');
  });

  it('reports a syntax error on one line', () => {
    const message = failure(() => renderTemplate('{% if x %}no end', scope, where));
    expect(message).toMatch(/^WORKFLOW_TEMPLATE: flow\.yaml: step "summarize" field "prompt": /);
    expect(message).not.toContain('\n');
  });

  it('gives templates no way out to JavaScript', () => {
    expect(renderTemplate('[{{ finder.constructor is defined }}]', scope, where)).toBe('[false]');
    expect(
      failure(() => renderTemplate('{{ finder.output.items.constructor.constructor }}', scope, where)),
    ).toContain('is undefined');
    expect(failure(() => renderTemplate('{{ process }}', scope, where))).toContain('"process" is undefined');
  });
});

describe('evaluateCondition', () => {
  it('takes Jinja2 and bare expressions with Python truthiness', () => {
    expect(evaluateCondition('{{ finder.output.count == 2 }}', scope, where)).toBe(true);
    expect(evaluateCondition('finder.output.count > 5', scope, where)).toBe(false);
    expect(evaluateCondition('finder.output.items', scope, where)).toBe(true);
    expect(evaluateCondition('{{ workflow.input.empty }}', scope, where)).toBe(false);
    expect(evaluateCondition("finder.output.approved and 'a' in finder.output.items", scope, where)).toBe(
      true,
    );
    expect(evaluateCondition('{{ group.errors }}', scope, where)).toBe(true);
  });
});

describe('evaluateValue', () => {
  it('returns typed values for paths and sole expressions, text otherwise', () => {
    expect(evaluateValue('finder.output.items', scope, where)).toEqual(['a', 'b']);
    expect(evaluateValue('{{ group.outputs[1] }}', scope, where)).toEqual({ score: 5 });
    expect(evaluateValue('{{ finder.output.count + 1 }}', scope, where)).toBe(3);
    expect(evaluateValue('n={{ finder.output.count }}', scope, where)).toBe('n=2');
  });
});

describe('coerceJson', () => {
  it('turns rendered literals into values as Conductor does', () => {
    expect(coerceJson('true')).toBe(true);
    expect(coerceJson('42')).toBe(42);
    expect(coerceJson('["a"]')).toEqual(['a']);
    expect(coerceJson('{not json')).toBe('{not json');
    expect(coerceJson('plain words')).toBe('plain words');
  });
});

describe('templateNames', () => {
  it('lists the top-level names a template reads, without its own loop variables', () => {
    expect(
      templateNames(
        '{% for t in planner.output.tasks %}{{ t.title }} {{ reviewer.output.ok | default(x) }}{% endfor %}',
      ).sort(),
    ).toEqual(['planner', 'reviewer', 'x']);
    expect(templateNames('{{ a and not b or c in d }}').sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(templateNames('plain text')).toEqual([]);
  });
});

describe('templateReferences', () => {
  const guardedness = (source: string) =>
    Object.fromEntries(templateReferences(source).map((reference) => [reference.name, reference.guarded]));

  it('marks a name guarded only when every read of it is under default, is defined, or an if on it', () => {
    expect(guardedness("{{ b.output.z | default('none') }} {{ c.output }}")).toEqual({ b: true, c: false });
    expect(guardedness('{% if b is defined %}{{ b.output }}{% else %}{{ c.output }}{% endif %}')).toEqual({
      b: true,
      c: false,
    });
    expect(guardedness('{{ b is defined and b.output.ok }} {{ b.output.x if b is defined else 0 }}')).toEqual(
      {
        b: true,
      },
    );
    expect(guardedness("{{ b.output | default('') }} {{ b.output.z }}")).toEqual({ b: false });
    // Only the branch evaluated once b is known to be there is guarded.
    expect(guardedness('{% if b is not defined %}{{ b.output }}{% endif %}')).toEqual({ b: false });
    expect(guardedness('{% if b is undefined %}none{% else %}{{ b.output }}{% endif %}')).toEqual({
      b: true,
    });
    expect(guardedness('{{ b is defined or b.output.ok }}')).toEqual({ b: false });
    expect(guardedness('{{ b is undefined or b.output.ok }}')).toEqual({ b: true });
  });

  it('says what the branch an unguarded read sits in knows of other names', () => {
    const writer = (source: string) =>
      templateReferences(source).find((candidate) => candidate.name === 'writer');
    expect(writer('{% if reviewer is defined %}{{ writer.output }}{% endif %}')).toMatchObject({
      guarded: false,
      underOthers: [{ present: new Set(['reviewer']), absent: new Set() }],
    });
    expect(writer('{% if reviewer is defined %}x{% else %}{{ writer.output }}{% endif %}')).toMatchObject({
      underOthers: [{ present: new Set(), absent: new Set(['reviewer']) }],
    });
    // A field missing says nothing of whether the step ran.
    expect(
      writer('{% if reviewer.output.x is defined %}x{% else %}{{ writer.output }}{% endif %}'),
    ).toMatchObject({ underOthers: [{ present: new Set(), absent: new Set() }] });
  });
});

describe('bounds on one evaluation (it is synchronous: nothing else, not even SIGTERM, runs meanwhile)', () => {
  it('refuses a range() over the limit before making it', () => {
    expect(failure(() => renderTemplate('{{ range(100000000) | length }}', {}, where))).toBe(
      'WORKFLOW_TEMPLATE: flow.yaml: step "summarize" field "prompt": range() of 100000000 items is over the limit of 100000 (a template\'s bound; templates are for shaping values, not computing)',
    );
    expect(renderTemplate('{{ range(1000) | length }}', {}, where)).toBe('1000');
  });

  it('stops loops inside loops at the step bound, empty bodies included', () => {
    expect(
      failure(() =>
        renderTemplate(
          '{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}',
          {},
          where,
        ),
      ),
    ).toMatch(/^WORKFLOW_TEMPLATE: .*evaluation took more than 500000 steps/);
  });

  it('refuses a string over the text bound', () => {
    const big = 'x'.repeat(9 * 1024 * 1024);
    expect(failure(() => renderTemplate('{{ big ~ big }}', { big }, where))).toMatch(
      /^WORKFLOW_TEMPLATE: .*a string of more than 16777216 characters/,
    );
  });
});
