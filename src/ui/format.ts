// The one place the dashboard turns numbers and times into text.

/** `$0.0412`: four decimals under a dollar (LLM calls are cheap), two above. */
export function formatMoney(usd: number | undefined): string {
  if (usd === undefined || !Number.isFinite(usd)) return '—';
  if (usd === 0) return '$0';
  if (Math.abs(usd) < 1) return `$${usd.toFixed(4)}`;
  return `$${usd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** `850ms`, `3.2s`, `4m 05s`, `2h 10m`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const whole = Math.floor(seconds);
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes}m ${String(whole % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ${String(minutes % 60).padStart(2, '0')}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** `950`, `12.3k`, `4.1M`. */
export function formatTokens(tokens: number | undefined): string {
  if (tokens === undefined || !Number.isFinite(tokens)) return '—';
  if (tokens < 1000) return String(tokens);
  if (tokens < 1_000_000) return `${(tokens / 1000).toFixed(tokens < 10_000 ? 1 : 0)}k`;
  return `${(tokens / 1_000_000).toFixed(1)}M`;
}

/** A count with thousands separators. */
export function formatCount(count: number | undefined): string {
  return count === undefined ? '—' : count.toLocaleString('en-US');
}

/** `42%`, `4.5%`. */
export function formatPercent(fraction: number | undefined): string {
  if (fraction === undefined || !Number.isFinite(fraction)) return '—';
  const percent = fraction * 100;
  return `${percent < 10 && percent !== 0 ? percent.toFixed(1) : Math.round(percent)}%`;
}

function toDate(time: string | number | undefined): Date | undefined {
  if (time === undefined) return undefined;
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Local date and time, `2025-03-04 14:05:09`. */
export function formatTime(time: string | number | undefined): string {
  const date = toDate(time);
  if (date === undefined) return '—';
  const pad = (value: number) => String(value).padStart(2, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** Local time of day with milliseconds, for event logs: `14:05:09.123`. */
export function formatClock(time: string | number | undefined): string {
  const date = toDate(time);
  if (date === undefined) return '—';
  return formatTime(date.getTime()).slice(11) + `.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** `3m ago`, `just now`; the full time belongs in a title beside it. */
export function formatAgo(time: string | number | undefined, now = Date.now()): string {
  const date = toDate(time);
  if (date === undefined) return '—';
  const ms = now - date.getTime();
  if (ms < 5_000) return 'just now';
  if (ms < 60_000) return `${Math.floor(ms / 1000)}s ago`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m ago`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)}h ago`;
  return `${Math.floor(ms / 86_400_000)}d ago`;
}

/** A value as indented JSON text (strings as they are). */
export function formatJson(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
