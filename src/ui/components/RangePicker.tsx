import { useUrlQuery } from '../url-query.js';

const RANGES = [7, 30, 90] as const;

/** The last 7/30/90 days, kept in the URL as `days`; answers the `since` to ask for. */
export function useRange(): { days: number; since: string; setDays: (days: number) => void } {
  const [query, setQuery] = useUrlQuery();
  const days = RANGES.find((value) => String(value) === query['days']) ?? 30;
  // Whole UTC days, so the query (and its answer) stays the same between renders.
  const today = new Date();
  today.setUTCHours(0, 0, 0, 0);
  const since = new Date(today.getTime() - (days - 1) * 86_400_000).toISOString();
  return { days, since, setDays: (value) => setQuery({ days: String(value) }) };
}

export function RangePicker({ days, onChange }: { days: number; onChange: (days: number) => void }) {
  return (
    <div className="segmented" role="group" aria-label="Range">
      {RANGES.map((value) => (
        <button
          key={value}
          type="button"
          aria-pressed={days === value}
          className={days === value ? 'active' : ''}
          onClick={() => onChange(value)}
        >
          {value} days
        </button>
      ))}
    </div>
  );
}
