// A report page over the last 7/30/90 days: its heading and range picker, then its error, loading
// or the report itself.

import type { ReactNode } from 'react';
import { queryString, useApi } from '../api.js';
import { ErrorText } from './ActivityStream.js';
import { RangePicker, useRange } from './RangePicker.js';

export function RangeReport<T>({
  title,
  path,
  children,
}: {
  title: string;
  /** The API path; the range's `since` is added to it. */
  path: string;
  children: (report: T) => ReactNode;
}) {
  const { days, since, setDays } = useRange();
  const { data, error, loading } = useApi<T>(`${path}${queryString({ since })}`);
  return (
    <div>
      <header className="page-head">
        <h1>{title}</h1>
        <RangePicker days={days} onChange={setDays} />
      </header>
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      {data === undefined ? loading && <p className="muted">Loading…</p> : children(data)}
    </div>
  );
}

/** One headline number of a report, with what it counts under it. */
export function Stat({ value, label, mono = false }: { value: ReactNode; label: string; mono?: boolean }) {
  return (
    <div className="stat">
      <div className="stat-value">{value}</div>
      <div className={mono ? 'stat-label mono' : 'stat-label'}>{label}</div>
    </div>
  );
}
