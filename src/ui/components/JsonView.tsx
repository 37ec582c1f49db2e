import { formatJson } from '../format.js';

/** A value as indented JSON, as text. */
export function JsonView({ value, label }: { value: unknown; label?: string }) {
  if (value === undefined) return <p className="muted">No output.</p>;
  return (
    <pre className="json-view" aria-label={label}>
      {formatJson(value)}
    </pre>
  );
}
