// The dashboard's frame: the top nav, the 401 screen, and one route per page under /ui/.

import type { ReactNode } from 'react';
import { Link, Route, Router, Switch, useLocation } from 'wouter';
import { usePathname } from 'wouter/use-browser-location';
import type { SessionInfo } from '../serve/ui/api-types.js';
import { idFromSegment } from '../serve/ui/id-codec.js';
import { useApi, useUnauthorized } from './api.js';
import { AgentPage } from './pages/AgentPage.js';
import { CallPage } from './pages/CallPage.js';
import { CostsPage } from './pages/CostsPage.js';
import { LaunchPage } from './pages/LaunchPage.js';
import { RoutingPage } from './pages/RoutingPage.js';
import { RunPage } from './pages/RunPage.js';
import { RunsPage } from './pages/RunsPage.js';
import { SessionContext } from './session.js';

const NAV: Array<[string, string]> = [
  ['/', 'Runs'],
  ['/costs', 'Costs'],
  ['/routing', 'Routing'],
];

function isActive(href: string, location: string): boolean {
  if (href === '/') return location === '/' || /^\/(runs|agents|calls|launch)(\/|$)/.test(location);
  return location.startsWith(href);
}

function TopNav({ session }: { session: SessionInfo | undefined }) {
  const [location] = useLocation();
  return (
    <header className="top-nav">
      <Link href="/" className="brand">
        Switchboard
      </Link>
      <nav aria-label="Main">
        {NAV.map(([href, label]) => (
          <Link
            key={href}
            href={href}
            className={isActive(href, location) ? 'active' : ''}
            aria-current={isActive(href, location) ? 'page' : undefined}
          >
            {label}
          </Link>
        ))}
      </nav>
      {session !== undefined && (
        <span className="session muted" title={session.location}>
          {session.host} · {session.database}
          {!session.actions && ' · read-only'} · v{session.version}
        </span>
      )}
    </header>
  );
}

function Unauthorized() {
  return (
    <main className="page unauthorized">
      <h1>Sign-in needed</h1>
      <p>
        This browser is not signed in to this server. Open the URL that <code>switchboard ui</code> (or{' '}
        <code>serve --ui</code>) printed; each one signs a browser in once, and opening a used one makes it
        print a new one.
      </p>
    </main>
  );
}

function NotFound() {
  return (
    <div>
      <h1>Not found</h1>
      <p>
        No page here. <Link href="/">Back to the runs</Link>.
      </p>
    </div>
  );
}

/**
 * A run's, agent run's or call's page, for the id in the address bar. Read from the raw path, not from
 * the route's params: wouter applies decodeURI to the path, which decodes `%20` but not `%2F`, so
 * `team%2Fdeploy` would reach the page both for the run `team/deploy` and the run `team%2Fdeploy`.
 */
function IdPage({ page }: { page: (id: string) => ReactNode }) {
  const segment = /^\/ui\/(?:runs|agents|calls)\/([^/]+)$/.exec(usePathname())?.[1];
  const id = segment === undefined ? undefined : idFromSegment(segment);
  return id === undefined ? <NotFound /> : page(id);
}

export function App() {
  const unauthorized = useUnauthorized();
  const session = useApi<SessionInfo>('/session');
  if (unauthorized) return <Unauthorized />;
  return (
    <SessionContext value={session.data}>
      <Router base="/ui">
        <a href="#main" className="skip-link">
          Skip to content
        </a>
        <TopNav session={session.data} />
        <main id="main" className="page">
          <Switch>
            <Route path="/">
              <RunsPage />
            </Route>
            <Route path="/runs/:id">
              <IdPage page={(id) => <RunPage key={id} id={id} />} />
            </Route>
            <Route path="/agents/:id">
              <IdPage page={(id) => <AgentPage key={id} id={id} />} />
            </Route>
            <Route path="/calls/:id">
              <IdPage page={(id) => <CallPage key={id} id={id} />} />
            </Route>
            <Route path="/launch">
              <LaunchPage />
            </Route>
            <Route path="/costs">
              <CostsPage />
            </Route>
            <Route path="/routing">
              <RoutingPage />
            </Route>
            <Route>
              <NotFound />
            </Route>
          </Switch>
        </main>
      </Router>
    </SessionContext>
  );
}
