// The workflow's shape as positioned nodes and edges: dagre lays it out once per graph; statuses are
// painted over it later without moving anything.

import dagre from '@dagrejs/dagre';
import type { WorkflowGraph } from '../../serve/ui/api-types.js';
import type { GraphGroup, GraphStep } from '../types.js';

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
  when?: string;
  /** Goes back up the layout (or to itself): a loop. */
  loopBack: boolean;
}

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
  routes: Array<{ to: string; when?: string }>;
}

/** Steps and groups as graph nodes; a parallel group's members are drawn inside their group. */
function sourcesOf(graph: WorkflowGraph): Source[] {
  const members = new Set(graph.groups.flatMap((group) => group.agents ?? []));
  const sources: Source[] = [{ id: START, kind: 'start', type: 'start', routes: [{ to: graph.entryPoint }] }];
  for (const step of graph.steps) {
    if (members.has(step.name)) continue;
    const routes = step.routes.length > 0 || step.type === 'terminate' ? step.routes : [{ to: END }];
    sources.push({ id: step.name, kind: 'step', type: step.type, step, routes });
  }
  for (const group of graph.groups) {
    const routes = group.routes.length > 0 ? group.routes : [{ to: END }];
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
    source.routes.forEach((route, index) => {
      if (!ids.has(route.to)) return;
      const edge: LayoutEdge = {
        id: `${source.id}→${route.to}#${index}`,
        source: source.id,
        target: route.to,
        loopBack: false,
      };
      if (route.when !== undefined) edge.when = route.when;
      edges.push(edge);
      layout.setEdge(source.id, route.to, { minlen: 1 }, edge.id);
    });
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
  for (const edge of edges) {
    const from = byId.get(edge.source);
    const to = byId.get(edge.target);
    edge.loopBack = from !== undefined && to !== undefined && (from === to || to.y <= from.y);
  }
  const { width = 0, height = 0 } = layout.graph();
  return { nodes, edges, width, height };
}
