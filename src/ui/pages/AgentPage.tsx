// An agent run: its task, phase and attempts, what it did, verify output, the diff and its merge.

import { useEffect, useRef, useState } from 'react';
import type { AgentDetail, AgentEvent, RunSummary } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { queryString, useApi } from '../api.js';
import { ActivityStream, ErrorText, SafeLink } from '../components/ActivityStream.js';
import { DiffView } from '../components/DiffView.js';
import { RunHeader, RunNotLoaded } from '../components/RunHeader.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTime } from '../format.js';
import { useEventStream } from '../stream.js';

export function AgentPage({ id }: { id: string }) {
  const { data, error, reload } = useApi<AgentDetail>(`/agents/${idSegment(id)}`);
  const [events, setEvents] = useState<AgentEvent[]>([]);
  const [summary, setSummary] = useState<RunSummary>();
  const shown = useRef(0);
  useEffect(() => {
    if (data === undefined) return;
    setEvents(data.events);
    shown.current = data.events.length;
  }, [data]);

  useEventStream(
    () => queryString({ agent: id, after: shown.current }),
    {
      'agent-event': (event) => {
        shown.current += 1;
        setEvents((current) => [...current, event as AgentEvent]);
      },
      run: (changed) => {
        const next = changed as RunSummary;
        if (next.status !== summary?.status) reload();
        setSummary(next);
      },
    },
    data !== undefined,
  );

  if (data === undefined) return <RunNotLoaded error={error} what="agent run" />;
  const current = summary ?? data.summary;
  return (
    <div>
      <RunHeader title={data.title} id={id}>
        started {formatTime(current.startedAt)}
      </RunHeader>
      <div className="status-bar" role="status">
        <StatusBadge status={current.status} />
        <span>
          <span className="label">phase</span> {data.phase}
        </span>
        <span>
          <span className="label">attempt</span> {data.attempt}
        </span>
        <span>
          <span className="label">duration</span> {formatDuration(current.durationMs)}
        </span>
        <span>
          <span className="label">cost</span> {formatMoney(current.costUsd)}
        </span>
        {current.host !== undefined && (
          <span>
            <span className="label">host</span> {current.host}
          </span>
        )}
      </div>
      {data.error !== undefined && <ErrorText code={data.errorCode} message={data.error} />}
      <div className="two-columns">
        <section className="card">
          <h2>Task</h2>
          <dl className="facts">
            <dt>Task</dt>
            <dd className="mono">{data.taskId}</dd>
            <dt>Repository</dt>
            <dd className="mono">{data.repo}</dd>
            <dt>Branch</dt>
            <dd className="mono">
              {data.branch} ← {data.baseBranch}
            </dd>
            {data.commit !== undefined && (
              <>
                <dt>Commit</dt>
                <dd className="mono">{data.commit}</dd>
              </>
            )}
            {data.merge !== undefined && (
              <>
                <dt>Merge</dt>
                <dd>
                  {data.merge}
                  {data.mergedCommit !== undefined && (
                    <span className="mono"> {data.mergedCommit.slice(0, 12)}</span>
                  )}
                </dd>
              </>
            )}
            {data.pullRequest !== undefined && (
              <>
                <dt>Pull request</dt>
                <dd>
                  <SafeLink url={data.pullRequest.url}>{`#${data.pullRequest.number ?? '?'}`}</SafeLink>
                </dd>
              </>
            )}
          </dl>
          {data.prompt !== undefined && (
            <details open>
              <summary>Prompt</summary>
              <pre>{data.prompt}</pre>
            </details>
          )}
          {data.detail !== undefined && (
            <>
              <h3>Verify / conflict output</h3>
              <pre className="output-block">{data.detail}</pre>
            </>
          )}
        </section>
        <section className="card">
          <h2>Activity</h2>
          <ActivityStream
            items={events.map((event, index) => ({
              id: String(index),
              at: event.at,
              type: event.kind,
              message: `${event.phase} · ${event.message}`,
              data: event.data,
            }))}
          />
        </section>
      </div>
      <section className="card">
        <h2>Diff</h2>
        {data.diff === undefined ? (
          <p className="muted">No diff (the repository is gone or nothing changed).</p>
        ) : (
          <DiffView diff={data.diff} truncated={data.diffTruncated} />
        )}
      </section>
    </div>
  );
}
