// The runs list: filters kept in the URL, pages by cursor, rows updated live from the stream.

import { useEffect, useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import type { RunList, RunSummary } from '../../serve/ui/api-types.js';
import { queryString, useApi } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';
import { RunsTable } from '../components/RunsTable.js';
import { useActionsAllowed } from '../session.js';
import { useEventStream } from '../stream.js';
import { useUrlQuery } from '../url-query.js';

const FILTERS = ['kind', 'status', 'name', 'tag', 'host', 'since', 'until'] as const;
const KINDS = ['workflow', 'agent', 'call'];
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

interface FilterProps<Value> {
  label: string;
  value: Value;
  onChange: (value: Value) => void;
}

function ChoiceFilter({
  label,
  value,
  choices,
  onChange,
}: FilterProps<string> & { choices: readonly string[] }) {
  return (
    <label className="field">
      <span>{label}</span>
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">all</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </label>
  );
}

function TextFilter({ label, value, placeholder, onChange }: FilterProps<string> & { placeholder?: string }) {
  return (
    <label className="field">
      <span>{label}</span>
      <input
        type="search"
        placeholder={placeholder}
        value={value}
        onChange={(event) => onChange(event.target.value)}
      />
    </label>
  );
}

/** A time kept as ISO in the URL, picked in local time. */
function TimeFilter({ label, value, onChange }: FilterProps<string | undefined>) {
  return (
    <label className="field">
      <span>{label}</span>
      <input
        type="datetime-local"
        value={toLocalInput(value)}
        onChange={(event) => onChange(fromLocalInput(event.target.value))}
      />
    </label>
  );
}

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
      <ChoiceFilter
        label="Kind"
        value={draft['kind'] ?? ''}
        choices={KINDS}
        onChange={(value) => set('kind', value)}
      />
      <ChoiceFilter
        label="Status"
        value={draft['status'] ?? ''}
        choices={STATUSES}
        onChange={(value) => set('status', value)}
      />
      <TextFilter label="Name" value={draft['name'] ?? ''} onChange={(value) => set('name', value)} />
      <TextFilter
        label="Tag"
        placeholder="key=value"
        value={draft['tag'] ?? ''}
        onChange={(value) => set('tag', value)}
      />
      <TextFilter label="Host" value={draft['host'] ?? ''} onChange={(value) => set('host', value)} />
      <TimeFilter label="Since" value={draft['since']} onChange={(value) => set('since', value)} />
      <TimeFilter label="Until" value={draft['until']} onChange={(value) => set('until', value)} />
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

/** Runs waiting for a person before the rest, each part newest first as listed. */
function waitingFirst(runs: readonly RunSummary[]): RunSummary[] {
  return [
    ...runs.filter((run) => run.status === 'waiting'),
    ...runs.filter((run) => run.status !== 'waiting'),
  ];
}

export function RunsPage() {
  const actions = useActionsAllowed();
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
        {actions && (
          <Link href="/launch" className="button-link">
            Start a run
          </Link>
        )}
      </header>
      <RunFilters query={query} onChange={setQuery} />
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      {data !== undefined && <RunsTable runs={firstPage ? waitingFirst(runs) : runs} />}
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
