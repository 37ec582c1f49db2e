// The run's workflow as a graph: laid out once per graph, coloured by the state folded from its events.

import '@xyflow/react/dist/style.css';
import {
  Background,
  BaseEdge,
  Controls,
  MarkerType,
  Position,
  type NodeHandle,
  ReactFlow,
  type ColorMode,
  type Edge,
  type EdgeProps,
  type NodeMouseHandler,
  type ReactFlowInstance,
} from '@xyflow/react';
import { useCallback, useMemo, useRef, type KeyboardEvent } from 'react';
import { LABEL_CHARS, type GraphLayout, type LayoutNode } from './graph-layout.js';
import { nodeTypes, type GraphFlowNode } from './GraphNodes.js';
import { edgeKey, type RunState } from './run-state.js';

interface RunGraphProps {
  /** From layoutGraph, memoised by the caller on the graph: laid out once, never per event. */
  layout: GraphLayout;
  state: RunState;
  /** In a replay, the cursor's time (ms since the epoch); undefined live. */
  clock?: number | undefined;
  selected: string | undefined;
  onSelect: (node: string | undefined) => void;
}

function flowType(node: LayoutNode): string {
  return node.kind === 'start' || node.kind === 'end'
    ? 'terminal'
    : node.kind === 'group'
      ? 'stepGroup'
      : 'step';
}

/** An edge along the path its layout gave it: a forward one around the steps between, a loop-back apart. */
function RoutedEdge({ data, markerEnd, label }: EdgeProps<LaidEdge>) {
  if (data === undefined) return null;
  return (
    <BaseEdge
      path={data.d}
      {...(markerEnd === undefined ? {} : { markerEnd })}
      label={label}
      labelX={data.labelX}
      labelY={data.labelY}
      labelBgPadding={[4, 2]}
      labelBgBorderRadius={4}
    />
  );
}

type LaidEdge = Edge<{ d: string; labelX: number; labelY: number }, 'routed'>;
const edgeTypes = { routed: RoutedEdge };

/** A node's handles where GraphNodes draws them: in at the top's middle, out at the bottom's. */
function handlesOf(node: LayoutNode): NodeHandle[] {
  const x = node.width / 2 - HANDLE / 2;
  const handles: NodeHandle[] = [];
  if (node.kind !== 'start')
    handles.push({
      type: 'target',
      position: Position.Top,
      x,
      y: -HANDLE / 2,
      width: HANDLE,
      height: HANDLE,
    });
  if (node.kind !== 'end')
    handles.push({
      type: 'source',
      position: Position.Bottom,
      x,
      y: node.height - HANDLE / 2,
      width: HANDLE,
      height: HANDLE,
    });
  return handles;
}
/** The handles' size in styles.css. */
const HANDLE = 6;

const colorMode: ColorMode = 'system';
/** Below this zoom node text is too small to read: the view starts at the top instead of fitting. */
const MIN_FIT_ZOOM = 0.7;

export function RunGraph({ layout, state, clock, selected, onSelect }: RunGraphProps) {
  const nodes = useMemo(
    (): GraphFlowNode[] =>
      layout.nodes.map((node) => ({
        id: node.id,
        type: flowType(node),
        position: { x: node.x, y: node.y },
        width: node.width,
        height: node.height,
        // Sizes and handles as laid out: React Flow otherwise forgets its measurements whenever the nodes
        // change (each event, each replay step) and draws no edge until it measures again, which it may not.
        measured: { width: node.width, height: node.height },
        handles: handlesOf(node),
        data: { layout: node, state: state.nodes.get(node.id), clock },
        selected: node.id === selected,
        selectable: node.kind === 'step' || node.kind === 'group',
        focusable: node.kind === 'step' || node.kind === 'group',
        ariaLabel: node.kind === 'step' || node.kind === 'group' ? `${node.type} step ${node.id}` : node.kind,
      })),
    [layout, state, clock, selected],
  );

  const edges = useMemo(
    (): Edge[] =>
      layout.edges.map((edge) => {
        const taken =
          state.taken.has(edgeKey(edge.source, edge.target)) ||
          (edge.source === '$start' && state.nodes.size > 0);
        const className = [
          'run-edge',
          taken ? 'taken' : '',
          edge.loopBack ? 'loop-back' : '',
          edge.exceptional === true ? 'exceptional' : '',
        ]
          .filter(Boolean)
          .join(' ');
        const label =
          edge.when === undefined
            ? undefined
            : edge.when.length > LABEL_CHARS
              ? `${edge.when.slice(0, LABEL_CHARS - 1)}…`
              : edge.when;
        return {
          id: edge.id,
          source: edge.source,
          target: edge.target,
          type: 'routed',
          data: edge.path,
          className,
          animated: taken && state.nodes.get(edge.target)?.status === 'running',
          markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
          focusable: false,
          ...(label === undefined ? {} : { label }),
        };
      }),
    [layout, state],
  );

  const onNodeClick: NodeMouseHandler<GraphFlowNode> = useCallback(
    (_event, node) => {
      if (node.type !== 'terminal') onSelect(node.id);
    },
    [onSelect],
  );

  // React Flow makes nodes focusable; Enter on a focused node opens its detail.
  const onKeyDown = useCallback(
    (event: KeyboardEvent<HTMLDivElement>) => {
      if (event.key !== 'Enter' && event.key !== ' ') return;
      const target = event.target as HTMLElement;
      const id = target.classList.contains('react-flow__node') ? target.dataset['id'] : undefined;
      if (id === undefined || id.startsWith('$')) return;
      event.preventDefault();
      onSelect(id);
    },
    [onSelect],
  );

  // The whole graph when it fits at a readable zoom; otherwise its top (the entry point), centred.
  const container = useRef<HTMLDivElement>(null);
  const onInit = useCallback(
    (flow: ReactFlowInstance<GraphFlowNode>) => {
      const box = container.current?.getBoundingClientRect();
      if (box === undefined || box.width === 0) return;
      const zoom = Math.min(1, box.width / layout.width, box.height / layout.height);
      if (zoom >= MIN_FIT_ZOOM) {
        void flow.fitView({ maxZoom: 1, padding: 0.05 });
        return;
      }
      const readable = Math.max(zoom, MIN_FIT_ZOOM);
      void flow.setViewport({ x: (box.width - layout.width * readable) / 2, y: 0, zoom: readable });
    },
    [layout],
  );

  return (
    <div className="run-graph" onKeyDown={onKeyDown} ref={container}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodeClick={onNodeClick}
        onPaneClick={() => onSelect(undefined)}
        onlyRenderVisibleElements
        nodesDraggable={false}
        nodesConnectable={false}
        edgesFocusable={false}
        onInit={onInit}
        minZoom={0.1}
        colorMode={colorMode}
      >
        <Background gap={20} size={1} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
