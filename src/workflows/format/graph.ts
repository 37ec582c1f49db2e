import { END, type GroupDefinition, type StepDefinition, type WorkflowDefinition } from '../model.js';

/** An edge of the step graph: where a step or group may go next, and the field that says so. */
export interface GraphEdge {
  to: string;
  field: string;
  /** What takes it: a route (its `when` as written, if any), a gate's option (its label), `abort_route` or `on_cap`. */
  kind: 'route' | 'option' | 'abort' | 'cap';
  when?: string;
  /** An option's label. */
  label?: string;
}

/**
 * Every way out of one step or group, in the order it is tried: its routes, a gate's options, a
 * questions step's `abort_route`, then `on_cap`. Validation and the run graph the dashboard draws both
 * read this, so a route kind added here is checked and drawn.
 */
export function edgesOf(node: StepDefinition | GroupDefinition): GraphEdge[] {
  const list: GraphEdge[] = node.routes.map((route, index) => ({
    to: route.to,
    field: `routes[${index}].to`,
    kind: 'route',
    ...(route.when === undefined ? {} : { when: route.when }),
  }));
  if ('type' in node && node.type === 'human_gate')
    node.options.forEach((option, index) =>
      list.push({ to: option.route, field: `options[${index}].route`, kind: 'option', label: option.label }),
    );
  if ('type' in node && node.type === 'questions' && node.abortRoute !== undefined)
    list.push({ to: node.abortRoute, field: 'abort_route', kind: 'abort' });
  if (node.onCap !== undefined) list.push({ to: node.onCap, field: 'on_cap', kind: 'cap' });
  return list;
}

/** The routes between a workflow's top-level steps and groups (parallel members sit inside their group). */
export interface WorkflowGraph {
  /** Steps and groups by name (members of a parallel group and for_each inline agents included). */
  nodes: Set<string>;
  edges: Map<string, GraphEdge[]>;
  /** A parallel member's group. */
  memberOf: Map<string, string>;
  reachableFrom(start: string): Set<string>;
  /** Nodes that may have finished before `node` starts on some path from the entry point. */
  canRunBefore(node: string): Set<string>;
  /** Nodes that have finished before `node` starts on every path from the entry point (its dominators). */
  mustRunBefore(node: string): Set<string>;
  /**
   * `mustRunBefore` over the paths that never run `skipped`: undefined when every path to `node` runs
   * it (what an `{% else %}` of `{% if skipped is defined %}` may rely on).
   */
  mustRunBeforeWithout(node: string, skipped: string): Set<string> | undefined;
}

export function graphOf(definition: WorkflowDefinition): WorkflowGraph {
  const nodes = new Set<string>([...definition.steps.keys(), ...definition.groups.keys()]);
  const edges = new Map<string, GraphEdge[]>();
  const memberOf = new Map<string, string>();
  for (const group of definition.groups.values()) {
    if (group.kind === 'parallel') for (const member of group.agents) memberOf.set(member, group.name);
  }
  for (const step of definition.steps.values()) edges.set(step.name, edgesOf(step));
  for (const group of definition.groups.values()) edges.set(group.name, edgesOf(group));
  const successors = (node: string): string[] =>
    (edges.get(node) ?? []).map((edge) => edge.to).filter((to) => to !== END && nodes.has(to));
  const reached = new Map<string, Set<string>>();
  const reachableFrom = (start: string): Set<string> => {
    const known = reached.get(start);
    if (known !== undefined) return known;
    const seen = new Set<string>();
    const stack = [start];
    while (stack.length > 0) {
      const node = stack.pop() as string;
      if (seen.has(node)) continue;
      seen.add(node);
      stack.push(...successors(node));
    }
    reached.set(start, seen);
    return seen;
  };
  const fromEntry = nodes.has(definition.entryPoint)
    ? reachableFrom(definition.entryPoint)
    : new Set<string>();
  const predecessors = new Map<string, string[]>();
  for (const node of nodes) {
    for (const next of successors(node)) predecessors.set(next, [...(predecessors.get(next) ?? []), node]);
  }
  const cache = new Map<string, Set<string>>();
  const canRunBefore = (node: string): Set<string> => {
    const cached = cache.get(node);
    if (cached !== undefined) return cached;
    // X may have finished before N starts when N is reachable from X by one route or more (X itself
    // counts when N sits on a loop through X), and X itself runs at all (reachable from the entry).
    const before = new Set<string>();
    const stack = [...(predecessors.get(node) ?? [])];
    while (stack.length > 0) {
      const candidate = stack.pop() as string;
      if (before.has(candidate)) continue;
      before.add(candidate);
      stack.push(...(predecessors.get(candidate) ?? []));
    }
    for (const candidate of before) if (!fromEntry.has(candidate)) before.delete(candidate);
    cache.set(node, before);
    return before;
  };
  const dominators = dominatorsOf(definition.entryPoint, successors, predecessors);
  const mustRunBefore = (node: string): Set<string> => {
    const before = new Set(dominators.get(node) ?? []);
    before.delete(node);
    return before;
  };
  const without = new Map<string, Map<string, Set<string>>>();
  const mustRunBeforeWithout = (node: string, skipped: string): Set<string> | undefined => {
    let found = without.get(skipped);
    if (found === undefined) {
      const kept = (from: string): string[] => successors(from).filter((to) => to !== skipped);
      const keptPredecessors = new Map<string, string[]>();
      for (const [to, from] of predecessors)
        if (to !== skipped)
          keptPredecessors.set(
            to,
            from.filter((name) => name !== skipped),
          );
      found =
        skipped === definition.entryPoint
          ? new Map()
          : dominatorsOf(definition.entryPoint, kept, keptPredecessors);
      without.set(skipped, found);
    }
    const reached = found.get(node);
    if (reached === undefined) return undefined;
    const before = new Set(reached);
    before.delete(node);
    return before;
  };
  return { nodes, edges, memberOf, reachableFrom, canRunBefore, mustRunBefore, mustRunBeforeWithout };
}

/**
 * Each reachable node's dominators (itself included): the nodes every path from the entry point to it
 * passes through. The classic iterative data flow, visited in reverse postorder: workflows are small.
 */
function dominatorsOf(
  entry: string,
  successors: (node: string) => string[],
  predecessors: Map<string, string[]>,
): Map<string, Set<string>> {
  const order: string[] = [];
  const seen = new Set<string>();
  const walk = (node: string): void => {
    seen.add(node);
    for (const next of successors(node)) if (!seen.has(next)) walk(next);
    order.unshift(node);
  };
  walk(entry);
  const dominators = new Map<string, Set<string>>([[entry, new Set([entry])]]);
  for (let changed = true; changed;) {
    changed = false;
    for (const node of order) {
      if (node === entry) continue;
      let common: Set<string> | undefined;
      for (const from of predecessors.get(node) ?? []) {
        const known = dominators.get(from);
        if (known === undefined) continue;
        common = common === undefined ? new Set(known) : new Set([...common].filter((n) => known.has(n)));
      }
      const next = new Set([...(common ?? []), node]);
      const previous = dominators.get(node);
      if (previous === undefined || previous.size !== next.size) {
        dominators.set(node, next);
        changed = true;
      }
    }
  }
  return dominators;
}

/** Loops: strongly connected sets of two or more nodes, or one node that routes to itself (Tarjan). */
export function stronglyConnected(graph: WorkflowGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let counter = 0;
  const successors = (node: string): string[] =>
    (graph.edges.get(node) ?? []).map((edge) => edge.to).filter((to) => graph.nodes.has(to));
  const connect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of successors(node)) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.unshift(member);
      } while (member !== node);
      if (component.length > 1 || successors(node).includes(node)) found.push(component);
    }
  };
  for (const node of graph.nodes) if (!index.has(node)) connect(node);
  return found;
}
