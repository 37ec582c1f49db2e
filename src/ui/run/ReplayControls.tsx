// Replays a finished run's events into the graph: play/pause, speed, and a scrubber over the events.
// Idle gaps longer than two seconds are shortened so a run that waited hours at a gate replays briskly.

import { useEffect, useMemo, useRef, useState } from 'react';
import type { WorkflowEventRecord } from '../../serve/ui/api-types.js';
import { formatClock } from '../format.js';

const SPEEDS = [1, 4, 16, 64] as const;
const MAX_GAP_MS = 2000;
const TICK_MS = 100;

/** Each event's time on the replay clock (ms from the first event, idle gaps capped). */
function timeline(events: readonly WorkflowEventRecord[]): number[] {
  const times: number[] = [];
  let previous: number | undefined;
  let clock = 0;
  for (const event of events) {
    const at = Date.parse(event.at);
    if (previous !== undefined && Number.isFinite(at))
      clock += Math.min(Math.max(at - previous, 0), MAX_GAP_MS);
    if (Number.isFinite(at)) previous = at;
    times.push(clock);
  }
  return times;
}

interface ReplayControlsProps {
  events: readonly WorkflowEventRecord[];
  /** Events applied so far (the cursor), or undefined when not replaying. */
  cursor: number | undefined;
  onCursor: (cursor: number | undefined) => void;
}

export function ReplayControls({ events, cursor, onCursor }: ReplayControlsProps) {
  const times = useMemo(() => timeline(events), [events]);
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState<number>(16);
  const clock = useRef(0);
  const cursorRef = useRef(cursor);
  useEffect(() => {
    cursorRef.current = cursor;
  });

  useEffect(() => {
    if (!playing) return;
    const timer = setInterval(() => {
      clock.current += TICK_MS * speed;
      let next = cursorRef.current ?? 0;
      while (next < times.length && (times[next] ?? 0) <= clock.current) next += 1;
      onCursor(next);
      if (next >= times.length) setPlaying(false);
    }, TICK_MS);
    return () => clearInterval(timer);
  }, [playing, speed, times, onCursor]);

  const start = () => {
    if (cursor === undefined || cursor >= events.length) {
      clock.current = 0;
      onCursor(0);
    }
    setPlaying(true);
  };
  const seek = (value: number) => {
    clock.current = value === 0 ? 0 : (times[value - 1] ?? 0);
    onCursor(value);
  };
  const stop = () => {
    setPlaying(false);
    onCursor(undefined);
  };
  const at = cursor !== undefined && cursor > 0 ? events[cursor - 1]?.at : undefined;

  return (
    <div className="replay" role="group" aria-label="Replay">
      {playing ? (
        <button type="button" onClick={() => setPlaying(false)}>
          ❚❚ Pause
        </button>
      ) : (
        <button type="button" onClick={start}>
          ▶ {cursor === undefined ? 'Replay' : 'Play'}
        </button>
      )}
      <label className="field inline">
        <span className="sr-only">Speed</span>
        <select
          value={speed}
          onChange={(event) => setSpeed(Number(event.target.value))}
          aria-label="Replay speed"
        >
          {SPEEDS.map((value) => (
            <option key={value} value={value}>
              {value}×
            </option>
          ))}
        </select>
      </label>
      <input
        type="range"
        min={0}
        max={events.length}
        value={cursor ?? events.length}
        onChange={(event) => seek(Number(event.target.value))}
        aria-label="Replay position (events applied)"
        aria-valuetext={`${cursor ?? events.length} of ${events.length} events`}
      />
      <span className="mono muted replay-at">
        {cursor ?? events.length}/{events.length}
        {at !== undefined && ` · ${formatClock(at)}`}
      </span>
      {cursor !== undefined && (
        <button type="button" className="ghost" onClick={stop}>
          Live view
        </button>
      )}
    </div>
  );
}
