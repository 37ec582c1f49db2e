import { useCallback, useMemo } from 'react';
import { useLocation, useSearch } from 'wouter';

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
