// Steer a running run: the text goes to POST /ui/api/runs/:id/guide (as `switchboard workflow guide`),
// and the run's next model turn reads it. Below the box, each guidance sent and where it landed, read
// from the run's own events (`guidance-sent`, `guidance-delivered`), so other senders' show too.

import { useMemo, useState, type FormEvent } from 'react';
import type { ActionResult, GuidanceBody, WorkflowEventRecord } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { ApiError, postJson } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';
import { formatClock } from '../format.js';

interface SentGuidance {
  id: number;
  text: string;
  sentBy: string;
  at: string;
  step?: string;
  landed?: { step: string; turn: number; visit: number };
}

/** The run's guidance, oldest first, each with the model turn that read it once one did. */
export function guidanceOf(events: readonly WorkflowEventRecord[]): SentGuidance[] {
  const sent = new Map<number, SentGuidance>();
  for (const event of events) {
    const id = event.data?.['id'];
    if (typeof id !== 'number') continue;
    if (event.type === 'guidance-sent') {
      sent.set(id, {
        id,
        text: String(event.data?.['text'] ?? ''),
        sentBy: String(event.data?.['sentBy'] ?? ''),
        at: event.at,
        ...(event.step === undefined ? {} : { step: event.step }),
      });
    } else if (event.type === 'guidance-delivered') {
      const guidance = sent.get(id);
      if (guidance !== undefined) {
        guidance.landed = {
          step: event.step ?? '',
          turn: Number(event.data?.['turn'] ?? 0),
          visit: Number(event.data?.['visit'] ?? 0),
        };
      }
    }
  }
  return [...sent.values()];
}

export function GuidanceBox({
  runId,
  status,
  events,
  onSent,
}: {
  runId: string;
  status: string;
  events: readonly WorkflowEventRecord[];
  onSent: (result: ActionResult) => void;
}) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const sent = useMemo(() => guidanceOf(events), [events]);
  const open = status === 'running' || status === 'waiting' || status === 'failed';
  if (!open && sent.length === 0) return null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: GuidanceBody = { text };
      onSent(await postJson<ActionResult>(`/runs/${idSegment(runId)}/guide`, body));
      setText('');
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="guidance-box" aria-label="Guidance">
      <h2>Guidance</h2>
      {open && (
        <form className="questions" onSubmit={(event) => void submit(event)}>
          <label className="field">
            <span>Tell the run&apos;s next model turn</span>
            <textarea
              value={text}
              onChange={(event) => setText(event.target.value)}
              rows={2}
              placeholder="e.g. look at the tests first"
            />
          </label>
          <div className="button-row">
            <button type="submit" className="primary" disabled={busy || text.trim() === ''}>
              Send guidance
            </button>
          </div>
        </form>
      )}
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      {sent.length > 0 && (
        <ul className="guidance-list">
          {sent.map((guidance) => (
            <li key={guidance.id}>
              <span className="mono">{formatClock(guidance.at)}</span> {guidance.sentBy}: {guidance.text}{' '}
              <span className="muted">
                {guidance.landed === undefined
                  ? `· pending${guidance.step === undefined ? '' : ` for ${guidance.step}`}`
                  : `· read by ${guidance.landed.step}, turn ${guidance.landed.turn}`}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
