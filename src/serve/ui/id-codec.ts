// Run, agent and call ids in the dashboard's paths (/ui/runs/<id>, /ui/api/runs/<id>/gate): one
// encoder and one decoder, for the pages (links, API requests, reading the address bar) and for serve
// (its routes). An id may hold any character: `team/deploy`, `50% off`, `?`, `#`, `&`, `ü`. A second
// encoding or decoding anywhere turns one run's id into another's: `team/deploy` encoded twice and
// decoded once is `team%2Fdeploy`, a different run. No Node or DOM import: both sides load this file.

/** The path segment that names `id`: every character outside `A-Z a-z 0-9 - _ . ! ~ * ' ( )` escaped. */
export function idSegment(id: string): string {
  return encodeURIComponent(id);
}

/** The id a path segment names, exactly as `idSegment` wrote it; `undefined` for a malformed escape. */
export function idFromSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
