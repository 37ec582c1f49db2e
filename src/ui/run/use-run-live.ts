// A workflow run's data kept current: its detail, every event (paged in), and the stream after them.

import { useCallback, useEffect, useRef, useState } from 'react';
import type { EventPage, RunDetail, RunSummary, WorkflowEventRecord } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { ApiError, getJson, queryString, useApi, type Loaded } from '../api.js';
import { useEventStream } from '../stream.js';

/** Events after which the run's detail (steps, gate, output) is fetched again. */
const REFETCH_ON = /^(step-end|group-end|run-end|run-waiting|run-cancel|run-resume|gate-.*|child-run)$/;
const REFETCH_DELAY_MS = 400;

export interface RunLive {
  detail: Loaded<RunDetail>;
  events: WorkflowEventRecord[];
  eventsLoaded: boolean;
  eventsError: ApiError | undefined;
  /** The latest summary from the stream, over the detail's. */
  summary: RunSummary | undefined;
}

export function useRunLive(runId: string): RunLive {
  const detail = useApi<RunDetail>(`/runs/${idSegment(runId)}`);
  const [events, setEvents] = useState<WorkflowEventRecord[]>([]);
  const [eventsLoaded, setEventsLoaded] = useState(false);
  const [eventsError, setEventsError] = useState<ApiError>();
  const [summary, setSummary] = useState<RunSummary>();
  const lastSeq = useRef(0);
  const refetchTimer = useRef<ReturnType<typeof setTimeout>>(undefined);
  const { reload } = detail;

  useEffect(() => {
    const controller = new AbortController();
    lastSeq.current = 0;
    setEvents([]);
    setEventsLoaded(false);
    setSummary(undefined);
    (async () => {
      const all: WorkflowEventRecord[] = [];
      for (;;) {
        const page = await getJson<EventPage>(
          `/runs/${idSegment(runId)}/events?after=${lastSeq.current}&limit=5000`,
          controller.signal,
        );
        all.push(...page.events);
        lastSeq.current = Math.max(lastSeq.current, page.lastSeq, ...page.events.map((event) => event.seq));
        if (!page.more || page.events.length === 0) break;
      }
      setEvents(all);
      setEventsLoaded(true);
    })().catch((reason: unknown) => {
      if (controller.signal.aborted) return;
      setEventsError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
    });
    return () => controller.abort();
  }, [runId]);

  const scheduleRefetch = useCallback(() => {
    if (refetchTimer.current !== undefined) clearTimeout(refetchTimer.current);
    refetchTimer.current = setTimeout(reload, REFETCH_DELAY_MS);
  }, [reload]);
  useEffect(() => () => clearTimeout(refetchTimer.current), []);

  useEventStream(
    () => queryString({ run: runId, after: lastSeq.current }),
    {
      'workflow-event': (data) => {
        const event = data as WorkflowEventRecord;
        if (typeof event.seq !== 'number' || event.seq <= lastSeq.current) return;
        lastSeq.current = event.seq;
        setEvents((current) => [...current, event]);
        if (REFETCH_ON.test(event.type)) scheduleRefetch();
      },
      run: (data) => setSummary(data as RunSummary),
    },
    eventsLoaded,
  );

  return { detail, events, eventsLoaded, eventsError, summary };
}
