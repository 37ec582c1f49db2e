// Cancel a running or parked run; resume a failed or interrupted one.

import { useState } from 'react';
import type { ActionResult } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { ApiError, postJson } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';

export function RunActions({
  runId,
  status,
  onDone,
}: {
  runId: string;
  status: string;
  onDone: (result: ActionResult) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const act = async (action: 'cancel' | 'resume') => {
    if (action === 'cancel' && !window.confirm(`Cancel run ${runId}?`)) return;
    setBusy(true);
    setError(undefined);
    try {
      onDone(await postJson<ActionResult>(`/runs/${idSegment(runId)}/${action}`, {}));
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
    } finally {
      setBusy(false);
    }
  };
  const canCancel = status === 'running' || status === 'waiting';
  const canResume = status === 'failed' || status === 'interrupted';
  if (!canCancel && !canResume && error === undefined) return null;
  return (
    <div className="run-actions">
      {canCancel && (
        <button type="button" className="danger" disabled={busy} onClick={() => void act('cancel')}>
          Cancel run
        </button>
      )}
      {canResume && (
        <button type="button" className="primary" disabled={busy} onClick={() => void act('resume')}>
          Resume
        </button>
      )}
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
    </div>
  );
}
