// The dashboard's live updates: one EventSource on /ui/api/stream per page.

import { useEffect, useRef } from 'react';

type Handlers = Record<string, (data: unknown) => void>;

/**
 * Listens to `/ui/api/stream` + `query` while `query` is not null. After a dropped connection it
 * reconnects with a fresh query from `query` at that moment (so `after=` continues where the page is),
 * rather than EventSource's own retry, which would repeat the first URL.
 */
export function useEventStream(query: () => string | null, handlers: Handlers, enabled: boolean): void {
  const handlersRef = useRef(handlers);
  const queryRef = useRef(query);
  useEffect(() => {
    handlersRef.current = handlers;
    queryRef.current = query;
  });

  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;

    const open = () => {
      const current = queryRef.current();
      if (current === null || stopped) return;
      source = new EventSource(`/ui/api/stream${current}`, { withCredentials: true });
      for (const name of Object.keys(handlersRef.current)) {
        source.addEventListener(name, (event) => {
          let data: unknown;
          try {
            data = JSON.parse((event as MessageEvent<string>).data);
          } catch {
            return;
          }
          handlersRef.current[name]?.(data);
        });
      }
      source.onerror = () => {
        source?.close();
        if (!stopped) retry = setTimeout(open, 3000);
      };
    };
    // A page kept in the back/forward cache would hold its connection open (browsers allow six per
    // host): close it when the page is hidden that way, and reconnect when it is shown again.
    const onPageHide = () => {
      if (retry !== undefined) clearTimeout(retry);
      source?.close();
    };
    const onPageShow = (event: PageTransitionEvent) => {
      if (event.persisted && !stopped) open();
    };
    window.addEventListener('pagehide', onPageHide);
    window.addEventListener('pageshow', onPageShow);
    open();
    return () => {
      stopped = true;
      window.removeEventListener('pagehide', onPageHide);
      window.removeEventListener('pageshow', onPageShow);
      onPageHide();
    };
  }, [enabled]);
}
