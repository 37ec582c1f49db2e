// Every event of the run, filterable by type.

import { useMemo, useState } from 'react';
import type { WorkflowEventRecord } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { DataTable } from '../components/DataTable.js';
import { formatClock, formatJson } from '../format.js';

const SHOWN = 2000;

export function EventLog({ events, runId }: { events: readonly WorkflowEventRecord[]; runId: string }) {
  const [type, setType] = useState('');
  const [step, setStep] = useState('');
  const types = useMemo(() => [...new Set(events.map((event) => event.type))].sort(), [events]);
  const filtered = useMemo(
    () =>
      events.filter(
        (event) => (type === '' || event.type === type) && (step === '' || (event.step ?? '').includes(step)),
      ),
    [events, type, step],
  );
  const shown = filtered.slice(-SHOWN);
  return (
    <section className="event-log">
      <div className="filters">
        <a className="button-link" href={`/ui/api/runs/${idSegment(runId)}/events.jsonl`} download>
          Download events (JSON lines)
        </a>
        <label className="field inline">
          <span>Type</span>
          <select value={type} onChange={(event) => setType(event.target.value)}>
            <option value="">all ({events.length})</option>
            {types.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label className="field inline">
          <span>Step</span>
          <input type="search" value={step} onChange={(event) => setStep(event.target.value)} />
        </label>
        {filtered.length > SHOWN && (
          <span className="muted">
            showing the latest {SHOWN} of {filtered.length}
          </span>
        )}
      </div>
      <DataTable className="events-table" columns={['#', 'Time', 'Type', 'Step', 'Data']}>
        {shown.map((event) => (
          <tr key={event.seq}>
            <td className="num">{event.seq}</td>
            <td className="mono">{formatClock(event.at)}</td>
            <td className="mono">{event.type}</td>
            <td className="mono">{event.step ?? ''}</td>
            <td>
              {event.data !== undefined && Object.keys(event.data).length > 0 && (
                <details>
                  <summary className="mono truncate">{JSON.stringify(event.data).slice(0, 120)}</summary>
                  <pre>{formatJson(event.data)}</pre>
                </details>
              )}
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}
