import { useCallback, useMemo } from 'react';
import { useLocation } from 'wouter';
// The raw query: wouter's own useSearch applies decodeURI first, and URLSearchParams would then decode
// a second time (a filter of `50%25` would read `50%`, `%41` would read `A`).
import { useSearch } from 'wouter/use-browser-location';

/** The page's query parameters, and a setter that keeps them in the URL (so a link reproduces the view). */
export function useUrlQuery(): [
  Record<string, string>,
  (changes: Record<string, string | undefined>) => void,
] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const values = useMemo(() => Object.fromEntries(new URLSearchParams(search)), [search]);
  const update = useCallback(
    (changes: Record<string, string | undefined>) => {
      const params = new URLSearchParams(search);
      for (const [key, value] of Object.entries(changes)) {
        if (value === undefined || value === '') params.delete(key);
        else params.set(key, value);
      }
      const text = params.toString();
      navigate(text === '' ? location : `${location}?${text}`);
    },
    [search, location, navigate],
  );
  return [values, update];
}
