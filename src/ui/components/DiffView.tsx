// A unified diff as text, its added and removed lines coloured.

const MAX_LINES = 5000;

function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) return 'diff-file';
  if (line.startsWith('@@')) return 'diff-hunk';
  if (line.startsWith('diff ')) return 'diff-file';
  if (line.startsWith('+')) return 'diff-add';
  if (line.startsWith('-')) return 'diff-del';
  return '';
}

export function DiffView({ diff, truncated }: { diff: string; truncated?: boolean | undefined }) {
  const lines = diff.split('\n');
  const shown = lines.slice(0, MAX_LINES);
  return (
    <div className="diff" role="region" aria-label="Diff" tabIndex={0}>
      {shown.map((line, index) => (
        <div key={index} className={`diff-line ${lineClass(line)}`}>
          {line === '' ? ' ' : line}
        </div>
      ))}
      {(truncated === true || lines.length > shown.length) && (
        <div className="diff-line muted">… diff cut</div>
      )}
    </div>
  );
}
