// Starting a workflow run: the workflow files under the server's folders, an inputs form built from
// the chosen file's `input:` section, and on submit the run's page. The server reads the values as the
// CLI reads `-i name=value` (text, coerced to the declared type), so the form sends text for each field
// filled in and leaves empty ones out (their default, or a required input's 400, is the server's).

import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import type { LaunchResult, WorkflowFileInfo, WorkflowList } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { ApiError, postJson, useApi } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';

const key = (workflow: WorkflowFileInfo) => `${workflow.root}\u0000${workflow.path}`;

function shown(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function InputsForm({ workflow }: { workflow: WorkflowFileInfo }) {
  const [, navigate] = useLocation();
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(
      workflow.inputs.map((input) => [
        input.name,
        input.type === 'boolean' ? input.default === true : shown(input.default),
      ]),
    ),
  );
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const inputs: Record<string, string | boolean> = {};
    for (const input of workflow.inputs) {
      const value = values[input.name];
      if (value !== undefined && value !== '') inputs[input.name] = value;
    }
    // A file of another root than the first is named by its whole path.
    const file = `${workflow.root}/${workflow.path}`;
    try {
      const { runId } = await postJson<LaunchResult>('/runs', { file, inputs });
      navigate(`/runs/${idSegment(runId)}`);
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
      setBusy(false);
    }
  };

  return (
    <form className="card launch-form" onSubmit={(event) => void submit(event)}>
      <h2 ref={heading} tabIndex={-1}>
        {workflow.name}
      </h2>
      <p className="muted mono small">{workflow.path}</p>
      {workflow.description !== undefined && <p>{workflow.description}</p>}
      {workflow.inputs.length === 0 && <p className="muted">This workflow takes no inputs.</p>}
      {workflow.inputs.map((input) => {
        const id = `input-${input.name}`;
        const help = input.description === undefined ? undefined : `${id}-help`;
        const value = values[input.name];
        const set = (next: string | boolean) => setValues((old) => ({ ...old, [input.name]: next }));
        return (
          <div key={input.name} className="launch-input">
            {input.type === 'boolean' ? (
              <label className="field inline" htmlFor={id}>
                <input
                  id={id}
                  type="checkbox"
                  checked={value === true}
                  onChange={(event) => set(event.target.checked)}
                  aria-describedby={help}
                />
                <span>{input.name}</span>
              </label>
            ) : (
              <label className="field" htmlFor={id}>
                <span>
                  {input.name} <span className="muted">({input.type})</span>
                  {input.required && input.default === undefined && <span aria-hidden="true"> *</span>}
                </span>
                {input.type === 'array' || input.type === 'object' ? (
                  <textarea
                    id={id}
                    rows={3}
                    className="mono"
                    value={String(value ?? '')}
                    placeholder={input.type === 'array' ? '["a", "b"]' : '{"key": "value"}'}
                    required={input.required && input.default === undefined}
                    aria-describedby={help}
                    onChange={(event) => set(event.target.value)}
                  />
                ) : (
                  <input
                    id={id}
                    type={input.type === 'number' ? 'number' : 'text'}
                    step={input.type === 'number' ? 'any' : undefined}
                    value={String(value ?? '')}
                    required={input.required && input.default === undefined}
                    aria-describedby={help}
                    onChange={(event) => set(event.target.value)}
                  />
                )}
              </label>
            )}
            {help !== undefined && (
              <div id={help} className="small muted">
                {input.description}
              </div>
            )}
          </div>
        );
      })}
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      <div className="button-row">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Starting…' : 'Start run'}
        </button>
      </div>
    </form>
  );
}

export function LaunchPage() {
  const { data, error, loading } = useApi<WorkflowList>('/workflows');
  const [chosen, setChosen] = useState<string>();
  const workflow = data?.workflows.find((candidate) => key(candidate) === chosen);
  return (
    <div>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link href="/">Runs</Link> / Start a run
      </nav>
      <header className="page-head">
        <h1>Start a workflow run</h1>
        {loading && <span className="muted">loading…</span>}
      </header>
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
      {data !== undefined && (
        <p className="muted">
          Workflow files under {data.roots.join(', ')} (three folders deep, dot folders and node_modules left
          out).
        </p>
      )}
      {data !== undefined && data.workflows.length === 0 && (
        <p className="empty">No workflow files found there.</p>
      )}
      <div className="launch-layout">
        {data !== undefined && data.workflows.length > 0 && (
          <ul className="launch-list" aria-label="Workflow files">
            {data.workflows.map((candidate) => (
              <li key={key(candidate)}>
                <button
                  type="button"
                  className={key(candidate) === chosen ? 'launch-choice chosen' : 'launch-choice'}
                  aria-pressed={key(candidate) === chosen}
                  onClick={() => setChosen(key(candidate))}
                >
                  <span className="launch-name">{candidate.name}</span>
                  <span className="mono small muted">{candidate.path}</span>
                  {candidate.description !== undefined && (
                    <span className="small">{candidate.description}</span>
                  )}
                </button>
              </li>
            ))}
          </ul>
        )}
        {workflow !== undefined && <InputsForm key={key(workflow)} workflow={workflow} />}
      </div>
    </div>
  );
}
