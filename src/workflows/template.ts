import { Environment, Interpreter, parse, tokenize } from '@huggingface/jinja';
import { SwitchboardError } from '../core/errors.js';
import type { TemplateScope } from './step-executor.js';

/**
 * Conductor's templates and `when:` expressions are Jinja2. They are evaluated here by
 * @huggingface/jinja: a Jinja2 interpreter written in TypeScript that walks its own syntax tree and
 * never hands template text to JavaScript's `eval`, so a workflow file can read the values it is given
 * and nothing else (no prototype, no `constructor`, no process). On top of it this module adds what
 * Conductor's renderer adds to Jinja2: undefined names are errors (StrictUndefined), the `json`
 * filter, `default` that also replaces `None`, and the few filters its examples use that the
 * interpreter lacks (`sum`, `min`, `max`, `map('filter')`).
 */

/** Where a template sits, for the one-line error. */
export interface TemplateWhere {
  file?: string;
  step?: string;
  field: string;
}

type RuntimeValue = { type: string; value: unknown };

/**
 * The interpreter's methods this module refines. They are internal to @huggingface/jinja (its types
 * mark them private and its d.ts imports do not resolve under NodeNext), so they are named here; the
 * version is pinned with `~` and template.test.ts fails if a release changes them.
 */
interface InterpreterInternals {
  run(program: unknown): RuntimeValue;
  evaluate(statement: unknown, environment: JinjaEnvironment): RuntimeValue;
  evaluateBlock(statements: unknown, environment: JinjaEnvironment): RuntimeValue;
  evaluateMemberExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue;
  applyFilter(operand: RuntimeValue, filterNode: unknown, environment: JinjaEnvironment): RuntimeValue;
  evaluateFilterExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue;
  evaluateTestExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue;
  evaluateArguments(args: unknown, environment: JinjaEnvironment): [RuntimeValue[], unknown];
}
interface JinjaEnvironment {
  set(name: string, value: unknown): unknown;
  lookupVariable(name: string): unknown;
}
const BaseInterpreter = Interpreter as unknown as new (environment: JinjaEnvironment) => InterpreterInternals;
const JinjaEnvironmentClass = Environment as unknown as new () => JinjaEnvironment;
type FilterNode = {
  type: string;
  value?: string;
  operand?: FilterNode;
  args?: unknown[];
  callee?: FilterNode;
};
type AstNode = { type: string; value?: unknown; object?: AstNode; property?: AstNode; computed?: boolean };

/** Node types whose value a block prints (every other statement prints its own text). */
const STATEMENT_TYPES = new Set([
  'Set',
  'If',
  'For',
  'Macro',
  'CallStatement',
  'FilterStatement',
  'Comment',
  'Break',
  'Continue',
]);

const parsed = new Map<string, ReturnType<typeof parse>>();
const PARSE_CACHE_LIMIT = 2000;

/** The parser's words for a tag that loads another template, which it has no reader for. */
const FILE_TAG = /^Unknown statement type: (include|extends|import|from)$/;

function compile(source: string): ReturnType<typeof parse> {
  let program = parsed.get(source);
  if (program === undefined) {
    try {
      program = parse(tokenize(source, { lstrip_blocks: false, trim_blocks: false }));
    } catch (error) {
      // A workflow file's include and extends are read as it loads (format/template-files.ts); a
      // tag that reaches the parser (in a template given at run time, or import) is refused by name.
      const tag = error instanceof Error ? FILE_TAG.exec(error.message)?.[1] : undefined;
      if (tag === undefined) throw error;
      throw new Error(
        tag === 'include' || tag === 'extends'
          ? `{% ${tag} %} is read only from a workflow file as it loads (relative to its folder); a template given at run time reads no files`
          : `{% ${tag} %} is not supported: macros from another file are not read; paste them in, or use {% include %}`,
        { cause: error },
      );
    }
    if (parsed.size >= PARSE_CACHE_LIMIT) parsed.clear();
    parsed.set(source, program);
  }
  return program;
}

/** A JavaScript value as the interpreter holds it (its Environment converts). */
function toRuntime(value: unknown): RuntimeValue {
  const environment = new JinjaEnvironmentClass();
  environment.set('value', value);
  return environment.lookupVariable('value') as unknown as RuntimeValue;
}

/** A runtime value back to plain JSON-like JavaScript. */
export function toPlain(value: RuntimeValue | undefined): unknown {
  if (value === undefined) return undefined;
  switch (value.type) {
    case 'UndefinedValue':
      return undefined;
    case 'NullValue':
      return null;
    case 'ArrayValue':
    case 'TupleValue':
      return (value.value as RuntimeValue[]).map((item) => toPlain(item));
    case 'ObjectValue':
    case 'KeywordArgumentsValue':
    case 'NamespaceValue': {
      const result: Record<string, unknown> = {};
      for (const [key, item] of value.value as Map<string, RuntimeValue>) result[key] = toPlain(item);
      return result;
    }
    case 'FunctionValue':
      return undefined;
    default:
      return value.value;
  }
}

/** The dotted name of an expression, for "x.y is undefined". */
function describe(node: AstNode | undefined): string {
  if (node === undefined) return 'value';
  if (node.type === 'Identifier') return String(node.value);
  if (node.type === 'MemberExpression') {
    const property = node.property;
    const name =
      property?.type === 'Identifier' || property?.type === 'StringLiteral'
        ? String(property.value)
        : property?.type === 'IntegerLiteral'
          ? `[${String(property.value)}]`
          : '[…]';
    return `${describe(node.object)}${name.startsWith('[') ? '' : '.'}${name}`;
  }
  return 'expression';
}

/** A filter or test node's name: `default` in `x | default('y')`, `defined` in `x is defined`. */
function calleeName(node: FilterNode | undefined): string | undefined {
  if (node?.type === 'Identifier') return node.value;
  if (node?.type === 'CallExpression') return node.callee?.value;
  return undefined;
}

/**
 * The one rule of what guards a name that may be undefined (a step that has not run, a field it did not
 * write): the operand of `| default(…)` (`| d`) and of `is defined` / `is undefined`, and, inside an
 * `{% if %}`, whatever its test asks `is defined` of. Rendering reads a guarded operand leniently (a
 * member of an undefined value is undefined, so the guard decides), and `validate` asks the same
 * question of each name (`templateReferences`), so the two cannot disagree.
 */
function guardOperand(node: unknown): AstNode | undefined {
  const record = node as { type?: string; operand?: AstNode; filter?: FilterNode; test?: FilterNode };
  if (record.type === 'FilterExpression') {
    const name = calleeName(record.filter);
    return name === 'default' || name === 'd' ? record.operand : undefined;
  }
  if (record.type === 'TestExpression') {
    const name = calleeName(record.test);
    return name === 'defined' || name === 'undefined' ? record.operand : undefined;
  }
  return undefined;
}

function undefinedError(node: AstNode | undefined): Error {
  return new Error(`"${describe(node)}" is undefined`);
}

const UNDEFINED = new JinjaEnvironmentClass().lookupVariable('undefined') as RuntimeValue;

function isUndefined(value: RuntimeValue): boolean {
  return value.type === 'UndefinedValue';
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}

/** Conductor's extras, applied before the interpreter's own filters. */
function customFilter(name: string, operand: RuntimeValue, args: RuntimeValue[]): RuntimeValue | undefined {
  const plain = toPlain(operand);
  switch (name) {
    case 'json': {
      const indent = args[0] === undefined ? 2 : Number(toPlain(args[0]));
      return toRuntime(JSON.stringify(plain ?? null, null, indent));
    }
    case 'default':
    case 'd': {
      const fallback = args[0] === undefined ? '' : toPlain(args[0]);
      const boolean = args[1] !== undefined && truthy(toPlain(args[1]));
      if (plain === undefined || plain === null || (boolean && !truthy(plain))) return toRuntime(fallback);
      return operand;
    }
    case 'sum':
    case 'min':
    case 'max': {
      if (!Array.isArray(plain)) return undefined;
      const numbers = plain.map(Number);
      if (name === 'sum') return toRuntime(numbers.reduce((total, item) => total + item, 0));
      if (numbers.length === 0) return toRuntime(null);
      return toRuntime(name === 'min' ? Math.min(...numbers) : Math.max(...numbers));
    }
    default:
      return undefined;
  }
}

/**
 * Bounds on one evaluation. It runs synchronously, so while it runs no signal handler (Ctrl-C, SIGTERM)
 * and no timer can: these bounds are what end a runaway template (`range(100000000)`, nested loops, a
 * string doubled in a loop) within about a second instead of running the process out of memory.
 */
export const TEMPLATE_LIMITS = {
  /** Items `range()` may make. */
  rangeItems: 100_000,
  /**
   * Steps one evaluation may take: an expression or a loop pass is one, a `range()` item two (about a
   * second of work on a busy machine; a template over a 1,000-item list uses a few thousand).
   */
  steps: 500_000,
  /** Characters of any one string, the rendered text included. */
  textChars: 16 * 1024 * 1024,
  /** Items of any one list. */
  listItems: 1_000_000,
} as const;

function limitError(what: string): Error {
  return new Error(`${what} (a template's bound; templates are for shaping values, not computing)`);
}

/** Work one evaluation has done: expressions, loop passes and `range()` items. */
interface Budget {
  steps: number;
}

function spend(budget: Budget, steps: number): void {
  budget.steps += steps;
  if (budget.steps > TEMPLATE_LIMITS.steps) {
    throw limitError(`evaluation took more than ${TEMPLATE_LIMITS.steps} steps`);
  }
}

/** The interpreter with Conductor's rules: strict undefined names and its filters. */
class ConductorInterpreter extends BaseInterpreter {
  /** An object already evaluated by a member expression, so the base class does not evaluate it twice. */
  private readonly evaluated = new Map<unknown, RuntimeValue>();
  private readonly budget: Budget;
  /** Above 0 while a guard's operand is read (see `guardOperand`). */
  private lenient = 0;

  constructor(environment: JinjaEnvironment, budget: Budget) {
    super(environment);
    this.budget = budget;
  }

  override evaluate(statement: unknown, environment: JinjaEnvironment): RuntimeValue {
    const memo = this.evaluated.get(statement);
    if (memo !== undefined) {
      this.evaluated.delete(statement);
      return memo;
    }
    spend(this.budget, 1);
    return bounded(super.evaluate(statement, environment));
  }

  override evaluateBlock(statements: unknown, environment: JinjaEnvironment): RuntimeValue {
    // Every loop pass evaluates its body here, an empty one included.
    spend(this.budget, 1);
    for (const statement of statements as AstNode[]) {
      if (STATEMENT_TYPES.has(statement.type) || statement.type === 'StringLiteral') continue;
      // Printing: an undefined name is an error (Jinja2's StrictUndefined), a function is not text.
      const checked = this.evaluate(statement, environment);
      if (isUndefined(checked)) throw undefinedError(statement);
      if (checked.type === 'FunctionValue')
        throw new Error(`"${describe(statement)}" is a function, not a value`);
      this.evaluated.set(statement, checked);
    }
    return super.evaluateBlock(statements, environment);
  }

  override evaluateFilterExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue {
    const operand = guardOperand(expression);
    if (operand === undefined) return super.evaluateFilterExpression(expression, environment);
    return this.applyFilter(
      this.evaluateGuarded(operand, environment),
      (expression as { filter: unknown }).filter,
      environment,
    );
  }

  override evaluateTestExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue {
    if (guardOperand(expression) === undefined) return super.evaluateTestExpression(expression, environment);
    this.lenient += 1;
    try {
      return super.evaluateTestExpression(expression, environment);
    } finally {
      this.lenient -= 1;
    }
  }

  private evaluateGuarded(node: AstNode, environment: JinjaEnvironment): RuntimeValue {
    this.lenient += 1;
    try {
      return this.evaluate(node, environment);
    } finally {
      this.lenient -= 1;
    }
  }

  override evaluateMemberExpression(expression: unknown, environment: JinjaEnvironment): RuntimeValue {
    const node = expression as AstNode;
    const object = this.evaluate(node.object, environment);
    if (this.lenient > 0 && (isUndefined(object) || object.type === 'NullValue')) return UNDEFINED;
    if (isUndefined(object)) throw undefinedError(node.object);
    this.evaluated.set(node.object, object);
    return super.evaluateMemberExpression(expression, environment);
  }

  override applyFilter(
    operand: RuntimeValue,
    filterNode: unknown,
    environment: JinjaEnvironment,
  ): RuntimeValue {
    const filter = filterNode as FilterNode;
    const name = calleeName(filter);
    if (name !== undefined) {
      const args =
        filter.type === 'CallExpression' ? this.evaluateArguments(filter.args, environment)[0] : [];
      if (name === 'map' && args.length === 1 && args[0]?.type === 'StringValue') {
        // map('upper'): Jinja2 applies a filter by name to every item; the interpreter only knows map(attribute=…).
        const inner = { type: 'Identifier', value: args[0].value };
        const items = operand.value as RuntimeValue[];
        return toRuntime(items.map((item) => toPlain(this.applyFilter(item, inner, environment))));
      }
      const custom = customFilter(name, operand, args);
      if (custom !== undefined) return custom;
    }
    return super.applyFilter(operand, filterNode, environment);
  }
}

/** A value evaluation produced, refused when it is over the text or list bound. */
function bounded(value: RuntimeValue): RuntimeValue {
  if (value.type === 'StringValue' && (value.value as string).length > TEMPLATE_LIMITS.textChars) {
    throw limitError(`a string of more than ${TEMPLATE_LIMITS.textChars} characters`);
  }
  if (value.type === 'ArrayValue' && (value.value as unknown[]).length > TEMPLATE_LIMITS.listItems) {
    throw limitError(`a list of more than ${TEMPLATE_LIMITS.listItems} items`);
  }
  return value;
}

function environmentFor(scope: TemplateScope, budget: Budget): JinjaEnvironment {
  const environment = new JinjaEnvironmentClass();
  for (const [name, value] of [
    ['true', true],
    ['false', false],
    ['none', null],
    ['True', true],
    ['False', false],
    ['None', null],
  ] as const)
    environment.set(name, value);
  environment.set('range', (start: number, stop?: number, step = 1) => {
    const [from, to] = stop === undefined ? [0, start] : [start, stop];
    if (step === 0) throw new Error('range() step must not be zero');
    const count = Math.ceil((to - from) / step);
    if (count > TEMPLATE_LIMITS.rangeItems) {
      throw limitError(`range() of ${count} items is over the limit of ${TEMPLATE_LIMITS.rangeItems}`);
    }
    spend(budget, 2 * Math.max(0, count));
    const result: number[] = [];
    for (let index = from; step > 0 ? index < to : index > to; index += step) result.push(index);
    return result;
  });
  for (const [name, value] of Object.entries(scope)) environment.set(name, value);
  return environment;
}

function templateError(error: unknown, where: TemplateWhere): SwitchboardError {
  const reason = error instanceof Error ? error.message : String(error);
  const place = `${where.file === undefined ? '' : `${where.file}: `}${where.step === undefined ? '' : `step "${where.step}" `}field "${where.field}"`;
  return new SwitchboardError('WORKFLOW_TEMPLATE', `${place}: ${reason.split('\n')[0] ?? reason}`, {
    hint: 'fix the template (Jinja2 syntax; every name must be an input, a finished step or a loop variable)',
    details: { ...where },
    cause: error,
  });
}

/** Renders a Jinja2 template against `scope`. @throws SwitchboardError `WORKFLOW_TEMPLATE` naming file, step and field. */
export function renderTemplate(source: string, scope: TemplateScope, where: TemplateWhere): string {
  if (!source.includes('{{') && !source.includes('{%') && !source.includes('{#')) return source;
  try {
    const budget: Budget = { steps: 0 };
    const result = new ConductorInterpreter(environmentFor(scope, budget), budget).run(compile(source));
    return String(result.value);
  } catch (error) {
    throw templateError(error, where);
  }
}

/** The expression inside a source that is one `{{ … }}` and nothing else, else undefined. */
function soleExpression(source: string): string | undefined {
  const match = /^\s*\{\{([\s\S]*)\}\}\s*$/.exec(source);
  if (match === null) return undefined;
  const inner = match[1] ?? '';
  return inner.includes('}}') || inner.includes('{{') ? undefined : inner;
}

/**
 * Evaluates an expression to a typed value: `finder.output.items`, `{{ a.output.n + 1 }}`. A source with
 * text around its `{{ }}` renders to a string.
 */
export function evaluateValue(expression: string, scope: TemplateScope, where: TemplateWhere): unknown {
  const inner =
    expression.includes('{{') || expression.includes('{%') ? soleExpression(expression) : expression;
  if (inner === undefined) return renderTemplate(expression, scope, where);
  const json = renderTemplate(`{{ (${inner}) | tojson }}`, scope, where);
  try {
    return JSON.parse(json) as unknown;
  } catch (error) {
    throw templateError(error, where);
  }
}

/**
 * Evaluates a route's `when:` with Python truthiness: Jinja2 (`{{ output.approved }}`) or a bare
 * expression as Conductor's older syntax (`exit_code == 0`).
 */
export function evaluateCondition(expression: string, scope: TemplateScope, where: TemplateWhere): boolean {
  const inner =
    expression.includes('{{') || expression.includes('{%') ? soleExpression(expression) : expression;
  if (inner === undefined) {
    // Text with templates inside: Conductor reads the rendered text as a boolean word.
    const text = renderTemplate(expression, scope, where).trim().toLowerCase();
    if (['true', '1', 'yes'].includes(text)) return true;
    if (['false', '0', 'no', '', 'none', 'null'].includes(text)) return false;
    return true;
  }
  return renderTemplate(`{% if (${inner}) %}1{% else %}0{% endif %}`, scope, where) === '1';
}

/**
 * Conductor's coercion of a rendered output template: `"true"`/`"false"` become booleans, numbers
 * numbers, JSON objects/arrays/literals their values; anything else stays text.
 */
export function coerceJson(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === 'true' || trimmed === 'True') return true;
  if (trimmed === 'false' || trimmed === 'False') return false;
  if (trimmed === 'null' || trimmed === 'None') return null;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(trimmed)) return Number(trimmed);
  if (/^[[{"]/.test(trimmed)) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/** Why a template cannot run, in one line (a syntax error, a tag that loads a file), or undefined. */
export function templateSyntaxProblem(source: string): string | undefined {
  if (!source.includes('{{') && !source.includes('{%') && !source.includes('{#')) return undefined;
  try {
    compile(source);
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return reason.split('\n')[0] ?? reason;
  }
}

/** A name a template reads at top level, and what guards it (see `guardOperand`). */
export interface TemplateReference {
  name: string;
  /** Every read of it is guarded by itself: under `| default`, `is defined`, or an `{% if %}` on it. */
  guarded: boolean;
  /**
   * For each read not guarded by itself, what the branch it sits in knows of other names: `present`
   * (`a` in `{% if b is defined %}{{ a.output }}{% endif %}` reads safely when `b` runs only after `a`)
   * and `absent` (in the `else`, safely when every path that skips `b` runs `a`).
   */
  underOthers: Known[];
}

/** Names a branch of a template knows are defined (`present`) or not (`absent`). */
export interface Known {
  present: ReadonlySet<string>;
  absent: ReadonlySet<string>;
}

/** Names a template reads at top level (`planner` in `{{ planner.output.x }}`), minus its own loop and set variables. */
export function templateNames(source: string): string[] {
  return templateReferences(source).map((reference) => reference.name);
}

/**
 * The names a template reads at top level, each with whether it is read only under a guard: what
 * `validate` checks against the steps that run before the template does.
 */
export function templateReferences(source: string): TemplateReference[] {
  if (!source.includes('{{') && !source.includes('{%')) return [];
  let program: unknown;
  try {
    program = compile(source);
  } catch {
    return [];
  }
  const reads = new Map<string, TemplateReference>();
  const bound = new Set<string>(['loop', 'true', 'false', 'none', 'True', 'False', 'None', 'range']);
  const visit = (node: unknown, parentKey: string | undefined, known: Known | true): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, parentKey, known);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown> & { type?: string };
    if (record.type === 'For' || record.type === 'Set') {
      const target = record.type === 'For' ? record.loopvar : record.assignee;
      collectBound(target, bound);
    }
    if (record.type === 'Identifier' && parentKey !== 'property' && parentKey !== 'filter') {
      const name = String(record.value);
      const reference = reads.get(name) ?? { name, guarded: true, underOthers: [] };
      if (known !== true && !known.present.has(name)) {
        reference.guarded = false;
        reference.underOthers.push(known);
      }
      reads.set(name, reference);
    }
    const operand = guardOperand(record);
    const childKnown = knownInChildren(record, known);
    for (const [key, value] of Object.entries(record)) {
      // An operator (`and`, `in`, `not`) is a token in the tree, not a name the template reads.
      if (key === 'type' || key === 'operator') continue;
      if (record.type === 'MemberExpression' && key === 'property' && record.computed !== true) continue;
      if (
        (record.type === 'FilterExpression' || record.type === 'TestExpression') &&
        (key === 'filter' || key === 'test')
      ) {
        // A filter's own name is not a variable; its arguments are read like any expression.
        const call = value as { type?: string; args?: unknown };
        if (call.type === 'CallExpression') visit(call.args, 'args', known);
        continue;
      }
      visit(value, key, value === operand ? true : childKnown(key));
    }
  };
  visit(program, undefined, { present: new Set(), absent: new Set() });
  return [...reads.values()].filter((reference) => !bound.has(reference.name));
}

/**
 * What a node's children know: in `{% if x is defined %}` its body that x is there and its else that
 * it is not (the other way round for `is not defined`), in `a if x is defined else b` the same of a and
 * b, right of `x is defined and …` (`x is undefined or …`) that x is there: the branches the
 * interpreter evaluates only once the test has decided.
 */
function knownInChildren(
  record: Record<string, unknown> & { type?: string },
  known: Known | true,
): (key: string) => Known | true {
  if (known === true) return () => true;
  const adding = (test: unknown, holds: boolean): Known => {
    const learnt = knownWhen(test, holds);
    return {
      present: new Set([...known.present, ...learnt.present]),
      absent: new Set([...known.absent, ...learnt.absent]),
    };
  };
  if (record.type === 'If' || record.type === 'Ternary') {
    const test = record.type === 'If' ? record['test'] : record['condition'];
    const [yes, no] = [adding(test, true), adding(test, false)];
    return (key) =>
      key === 'body' || key === 'trueExpr' ? yes : key === 'alternate' || key === 'falseExpr' ? no : known;
  }
  const operator = (record['operator'] as { value?: unknown } | undefined)?.value;
  if (record.type === 'BinaryExpression' && (operator === 'and' || operator === 'or')) {
    const right = adding(record['left'], operator === 'and');
    return (key) => (key === 'right' ? right : known);
  }
  return () => known;
}

/**
 * What a test tells of names when it evaluates to `holds`: `b.output is defined` true, b is present;
 * false, absent (`is undefined` and `is not defined` the other way round), through `and` (true) and
 * `or` (false) chains.
 */
function knownWhen(test: unknown, holds: boolean): { present: string[]; absent: string[] } {
  const record = test as (Record<string, unknown> & { type?: string }) | null;
  if (record === null || typeof record !== 'object') return { present: [], absent: [] };
  const operator = (record['operator'] as { value?: unknown } | undefined)?.value;
  if (record.type === 'BinaryExpression' && operator === (holds ? 'and' : 'or')) {
    const [left, right] = [knownWhen(record['left'], holds), knownWhen(record['right'], holds)];
    return { present: [...left.present, ...right.present], absent: [...left.absent, ...right.absent] };
  }
  const tested = record.type === 'TestExpression' ? guardOperand(record) : undefined;
  let operand = tested;
  while (operand?.type === 'MemberExpression') operand = operand.object;
  if (operand?.type !== 'Identifier') return { present: [], absent: [] };
  const name = String(operand.value);
  // `x.y is defined` proves x there when true; when false, only a bare `x is defined` proves x absent.
  const bare = tested?.type === 'Identifier';
  const positive =
    calleeName(record['test'] as FilterNode) === 'defined'
      ? record['negate'] !== true
      : record['negate'] === true;
  if (positive === holds) return { present: [name], absent: [] };
  return { present: [], absent: bare ? [name] : [] };
}

function collectBound(target: unknown, bound: Set<string>): void {
  if (target === null || typeof target !== 'object') return;
  const record = target as { type?: string; value?: unknown };
  if (record.type === 'Identifier') bound.add(String(record.value));
  if (Array.isArray(record.value)) for (const item of record.value) collectBound(item, bound);
}
