// The workflow's shape as positioned nodes and edges: dagre lays it out once per graph; statuses are
// painted over it later without moving anything.

import dagre from '@dagrejs/dagre';
import type { WorkflowGraph } from '../../serve/ui/api-types.js';
import type { GraphGroup, GraphRoute, GraphStep } from '../types.js';

export const START = '$start';
export const END = '$end';

export interface LayoutNode {
  id: string;
  kind: 'step' | 'group' | 'start' | 'end';
  /** A step's type (`agent`, `script`, …), a group's kind, or `start`/`end`. */
  type: string;
  step?: GraphStep;
  group?: GraphGroup;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
  /** What the edge is labelled with: routes' `when`, options' labels, `abort`, `on cap`; joined by ` / `
   * when several ways out of a step lead to the same target. */
  when?: string;
  /** Only taken when a step's `max_visits` is reached (`on_cap`) or a questions step aborts. */
  exceptional?: boolean;
  /** Goes back up the layout (or to itself): a loop. */
  loopBack: boolean;
  /**
   * The edge's SVG path and where its label sits. A forward edge follows the points dagre routed it
   * through (around the steps between, its label in the space dagre kept for it); a loop-back goes out
   * of its source's right side, around, into its target's right side, its label on the curve's outer side.
   */
  path: { d: string; labelX: number; labelY: number };
}

/** How far a loop-back's curve reaches right of its nodes: a base and one more lane per loop sharing a node. */
const LOOP_REACH = 64;
const LOOP_LANE = 28;

export interface GraphLayout {
  nodes: LayoutNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
}

const STEP_SIZE = { width: 220, height: 72 };
const GROUP_SIZE = { width: 260, height: 104 };
const PILL_SIZE = { width: 96, height: 32 };
const LARGE_GRAPH = 150;

function sizeOf(kind: LayoutNode['kind']) {
  return kind === 'group' ? GROUP_SIZE : kind === 'step' ? STEP_SIZE : PILL_SIZE;
}

interface Source {
  id: string;
  kind: LayoutNode['kind'];
  type: string;
  step?: GraphStep;
  group?: GraphGroup;
  routes: GraphRoute[];
}

/** The text an edge shows for one way out of its step. */
function routeLabel(route: GraphRoute): string | undefined {
  switch (route.kind) {
    case 'option':
      return route.label;
    case 'abort':
      return 'abort';
    case 'cap':
      return 'on cap';
    default:
      return route.when;
  }
}

/** A step goes to the end when nothing but `on_cap` or `abort_route` leads anywhere else. */
function ordinary(routes: readonly GraphRoute[]): boolean {
  return routes.some((route) => route.kind === undefined || route.kind === 'option');
}

/** Steps and groups as graph nodes; a parallel group's members are drawn inside their group. */
function sourcesOf(graph: WorkflowGraph): Source[] {
  const members = new Set(graph.groups.flatMap((group) => group.agents ?? []));
  const sources: Source[] = [{ id: START, kind: 'start', type: 'start', routes: [{ to: graph.entryPoint }] }];
  for (const step of graph.steps) {
    if (members.has(step.name)) continue;
    const routes =
      ordinary(step.routes) || step.type === 'terminate' ? step.routes : [...step.routes, { to: END }];
    sources.push({ id: step.name, kind: 'step', type: step.type, step, routes });
  }
  for (const group of graph.groups) {
    const routes = ordinary(group.routes) ? group.routes : [...group.routes, { to: END }];
    sources.push({ id: group.name, kind: 'group', type: group.kind, group, routes });
  }
  if (sources.some((source) => source.routes.some((route) => route.to === END)))
    sources.push({ id: END, kind: 'end', type: 'end', routes: [] });
  return sources;
}

export function layoutGraph(graph: WorkflowGraph): GraphLayout {
  const sources = sourcesOf(graph);
  const ids = new Set(sources.map((source) => source.id));
  const layout = new dagre.graphlib.Graph({ multigraph: true });
  layout.setGraph({ rankdir: 'TB', nodesep: 36, ranksep: 56, edgesep: 16, marginx: 16, marginy: 16 });
  layout.setDefaultEdgeLabel(() => ({}));
  for (const source of sources) layout.setNode(source.id, { ...sizeOf(source.kind) });

  const edges: LayoutEdge[] = [];
  for (const source of sources) {
    // One edge per target: a gate's two options to the same step are one arrow labelled with both.
    const byTarget = new Map<string, LayoutEdge>();
    for (const route of source.routes) {
      if (!ids.has(route.to)) continue;
      const label = routeLabel(route);
      const exceptional = route.kind === 'cap' || route.kind === 'abort';
      const known = byTarget.get(route.to);
      if (known !== undefined) {
        if (label !== undefined) known.when = known.when === undefined ? label : `${known.when} / ${label}`;
        if (!exceptional) delete known.exceptional;
        continue;
      }
      const edge: LayoutEdge = {
        id: `${source.id}→${route.to}`,
        source: source.id,
        target: route.to,
        loopBack: false,
        path: { d: '', labelX: 0, labelY: 0 },
      };
      if (label !== undefined) edge.when = label;
      if (exceptional) edge.exceptional = true;
      byTarget.set(route.to, edge);
      edges.push(edge);
    }
    for (const edge of byTarget.values()) {
      // Room for the label (10.5px monospace), so dagre keeps it clear of the steps.
      const label = edge.when === undefined ? {} : labelSize(edge.when);
      layout.setEdge(source.id, edge.target, { minlen: 1, ...label, labelpos: 'c' }, edge.id);
    }
  }
  // Crossing reduction is most of dagre's time on a large graph (seconds at 500 steps on a small machine):
  // past a few hundred nodes, the first ordering it finds is good enough.
  dagre.layout(layout, { disableOptimalOrderHeuristic: sources.length > LARGE_GRAPH });

  const nodes = sources.map((source): LayoutNode => {
    const placed = layout.node(source.id);
    const { width, height } = sizeOf(source.kind);
    const node: LayoutNode = {
      id: source.id,
      kind: source.kind,
      type: source.type,
      x: placed.x - width / 2,
      y: placed.y - height / 2,
      width,
      height,
    };
    if (source.step !== undefined) node.step = source.step;
    if (source.group !== undefined) node.group = source.group;
    return node;
  });
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const lanes = new Map<string, number>();
  let right = 0;
  for (const edge of edges) {
    const from = byId.get(edge.source);
    const to = byId.get(edge.target);
    edge.loopBack = from !== undefined && to !== undefined && (from === to || to.y <= from.y);
    if (from === undefined || to === undefined) continue;
    if (!edge.loopBack) {
      edge.path = routedPath(from, to, layout.edge(edge.source, edge.target, edge.id));
      continue;
    }
    const lane = Math.max(lanes.get(from.id) ?? 0, lanes.get(to.id) ?? 0);
    lanes.set(from.id, lane + 1);
    lanes.set(to.id, lane + 1);
    edge.path = loopPath(from, to, LOOP_REACH + lane * LOOP_LANE);
    right = Math.max(right, edge.path.labelX + 80);
  }
  const size = layout.graph();
  return { nodes, edges, width: Math.max(size.width ?? 0, right), height: size.height ?? 0 };
}

/** The longest label an edge shows, in characters (RunGraph shortens longer ones). */
export const LABEL_CHARS = 40;

function labelSize(text: string): { width: number; height: number } {
  return { width: Math.min(text.length, LABEL_CHARS) * 6.5 + 10, height: 18 };
}

/**
 * From `from`'s bottom to `to`'s top through the points dagre routed the edge along, rounded at each
 * bend; its label where dagre placed it (else half way).
 */
function routedPath(
  from: LayoutNode,
  to: LayoutNode,
  placed: { points?: Array<{ x: number; y: number }>; x?: number; y?: number } | undefined,
): LayoutEdge['path'] {
  const start = { x: from.x + from.width / 2, y: from.y + from.height };
  const end = { x: to.x + to.width / 2, y: to.y };
  const inner = (placed?.points ?? []).slice(1, -1);
  const points = [start, ...inner, end];
  let d = `M ${start.x} ${start.y}`;
  for (let index = 1; index < points.length - 1; index++) {
    const bend = points[index] as { x: number; y: number };
    const next = points[index + 1] as { x: number; y: number };
    d += ` Q ${bend.x} ${bend.y}, ${(bend.x + next.x) / 2} ${(bend.y + next.y) / 2}`;
  }
  d += ` L ${end.x} ${end.y}`;
  return {
    d,
    labelX: placed?.x ?? (start.x + end.x) / 2,
    labelY: placed?.y ?? (start.y + end.y) / 2,
  };
}

/** A cubic curve from `from`'s right side to `to`'s (a small loop when they are one node), reaching `reach` out. */
function loopPath(from: LayoutNode, to: LayoutNode, reach: number): LayoutEdge['path'] {
  const sx = from.x + from.width;
  const tx = to.x + to.width;
  if (from === to) {
    const y = from.y + from.height / 2;
    return {
      d: `M ${sx} ${y - 12} C ${sx + reach} ${y - 48}, ${sx + reach} ${y + 48}, ${sx} ${y + 12}`,
      labelX: sx + reach * 0.75,
      labelY: y,
    };
  }
  const sy = from.y + from.height / 2;
  const ty = to.y + to.height / 2;
  const out = Math.max(sx, tx) + reach;
  return {
    d: `M ${sx} ${sy} C ${out} ${sy}, ${out} ${ty}, ${tx} ${ty}`,
    // The curve's midpoint (t = ½) of a cubic whose control points both sit at x = out.
    labelX: (sx + tx) / 8 + (out * 3) / 4,
    labelY: (sy + ty) / 2,
  };
}
