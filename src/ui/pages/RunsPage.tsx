// The runs list: filters kept in the URL, pages by cursor, rows updated live from the stream.

import { useEffect, useState, type FormEvent } from 'react';
import type { RunList, RunSummary } from '../../serve/ui/api-types.js';
import { queryString, useApi } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';
import { RunsTable } from '../components/RunsTable.js';
import { useEventStream } from '../stream.js';
import { useUrlQuery } from '../url-query.js';

const FILTERS = ['kind', 'status', 'name', 'tag', 'host', 'since', 'until'] as const;
const STATUSES = [
  'running',
  'waiting',
  'completed',
  'succeeded',
  'failed',
  'interrupted',
  'cancelled',
  'conflict',
];

/** `datetime-local` value ↔ ISO time in the URL. */
const toLocalInput = (iso: string | undefined) => {
  if (iso === undefined) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocalInput = (value: string) => (value === '' ? undefined : new Date(value).toISOString());

function RunFilters({
  query,
  onChange,
}: {
  query: Record<string, string>;
  onChange: (values: Record<string, string | undefined>) => void;
}) {
  const [draft, setDraft] = useState(query);
  useEffect(() => setDraft(query), [query]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onChange({ ...Object.fromEntries(FILTERS.map((key) => [key, draft[key]])), cursor: undefined });
  };
  const set = (key: string, value: string | undefined) => setDraft({ ...draft, [key]: value ?? '' });
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter runs">
      <label className="field">
        <span>Kind</span>
        <select value={draft['kind'] ?? ''} onChange={(event) => set('kind', event.target.value)}>
          <option value="">all</option>
          <option value="workflow">workflow</option>
          <option value="agent">agent</option>
          <option value="call">call</option>
        </select>
      </label>
      <label className="field">
        <span>Status</span>
        <select value={draft['status'] ?? ''} onChange={(event) => set('status', event.target.value)}>
          <option value="">all</option>
          {STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Name</span>
        <input
          type="search"
          value={draft['name'] ?? ''}
          onChange={(event) => set('name', event.target.value)}
        />
      </label>
      <label className="field">
        <span>Tag</span>
        <input
          type="search"
          placeholder="key=value"
          value={draft['tag'] ?? ''}
          onChange={(event) => set('tag', event.target.value)}
        />
      </label>
      <label className="field">
        <span>Host</span>
        <input
          type="search"
          value={draft['host'] ?? ''}
          onChange={(event) => set('host', event.target.value)}
        />
      </label>
      <label className="field">
        <span>Since</span>
        <input
          type="datetime-local"
          value={toLocalInput(draft['since'])}
          onChange={(event) => set('since', fromLocalInput(event.target.value))}
        />
      </label>
      <label className="field">
        <span>Until</span>
        <input
          type="datetime-local"
          value={toLocalInput(draft['until'])}
          onChange={(event) => set('until', fromLocalInput(event.target.value))}
        />
      </label>
      <div className="button-row">
        <button type="submit" className="primary">
          Apply
        </button>
        <button
          type="button"
          onClick={() => onChange(Object.fromEntries([...FILTERS, 'cursor'].map((key) => [key, undefined])))}
        >
          Clear
        </button>
      </div>
    </form>
  );
}

/** Whether a run from the stream belongs in the list as filtered (the server filters the pages). */
function matches(run: RunSummary, query: Record<string, string>): boolean {
  if (query['kind'] !== undefined && run.kind !== query['kind']) return false;
  if (query['status'] !== undefined && run.status !== query['status']) return false;
  if (query['name'] !== undefined && run.name !== query['name']) return false;
  if (query['host'] !== undefined && run.host !== query['host']) return false;
  if (query['until'] !== undefined) return false;
  if (query['tag'] !== undefined) {
    const [key, value] = query['tag'].split('=');
    if (key === undefined || run.tags?.[key] !== value) return false;
  }
  return query['since'] === undefined || Date.parse(run.startedAt) >= Date.parse(query['since']);
}

export function RunsPage() {
  const [query, setQuery] = useUrlQuery();
  const path = `/runs${queryString({ ...Object.fromEntries(FILTERS.map((key) => [key, query[key]])), cursor: query['cursor'] })}`;
  const { data, error, loading } = useApi<RunList>(path);
  const [runs, setRuns] = useState<RunSummary[]>([]);
  useEffect(() => setRuns(data?.runs ?? []), [data]);
  const firstPage = query['cursor'] === undefined;

  useEventStream(
    () => '',
    {
      runs: (changed) => {
        if (!Array.isArray(changed)) return;
        setRuns((current) => {
          const next = [...current];
          const fresh: RunSummary[] = [];
          for (const run of changed as RunSummary[]) {
            const at = next.findIndex((row) => row.kind === run.kind && row.id === run.id);
            if (at >= 0) next[at] = run;
            else if (firstPage && matches(run, query)) fresh.push(run);
          }
          return [...fresh.sort((a, b) => b.startedAt.localeCompare(a.startedAt)), ...next];
        });
      },
    },
    true,
  );

  return (
    <div>
      <header className="page-head">
        <h1>Runs</h1>
        {loading && <span className="muted">loading…</span>}
      </header>
      <RunFilters query={query} onChange={setQuery} />
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      {data !== undefined && <RunsTable runs={runs} />}
      <div className="button-row pager">
        {!firstPage && (
          <button type="button" onClick={() => setQuery({ cursor: undefined })}>
            ← Newest
          </button>
        )}
        {data?.next !== undefined && (
          <button type="button" onClick={() => setQuery({ cursor: data.next })}>
            Older →
          </button>
        )}
      </div>
    </div>
  );
}
