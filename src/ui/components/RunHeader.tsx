// The head of a run's page (workflow run, agent run or call): the way back, its name and id, and a
// line about it; and what the page shows before its run has loaded.

import type { ReactNode } from 'react';
import { Link } from 'wouter';
import type { ApiError } from '../api.js';
import { ErrorText } from './ActivityStream.js';

export function RunHeader({
  title,
  id,
  parentHref,
  children,
}: {
  title: string;
  id: string;
  /** The page of the run this one ran under, if any. */
  parentHref?: string | undefined;
  /** The line under the title. */
  children: ReactNode;
}) {
  return (
    <header className="page-head">
      <div>
        <div className="crumbs">
          <Link href="/">Runs</Link>
          {parentHref !== undefined && (
            <>
              {' / '}
              <Link href={parentHref}>parent run</Link>
            </>
          )}
        </div>
        <h1>
          {title} <span className="mono muted id">{id}</span>
        </h1>
        <div className="muted">{children}</div>
      </div>
    </header>
  );
}

/** The error that kept a run's page from loading, or that it is still loading. */
export function RunNotLoaded({ error, what }: { error: ApiError | undefined; what: string }) {
  if (error !== undefined) return <ErrorText code={error.code} message={error.message} hint={error.hint} />;
  return <p className="muted">Loading {what}…</p>;
}
