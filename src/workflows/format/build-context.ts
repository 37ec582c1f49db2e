import type { StepPlace } from './build-step.js';
import { workflowInvalid } from './problem.js';

/** What `build` needs besides the parsed file. */
export interface BuildContext {
  file: string;
  hash: string;
  /** The file as written (after `!file` and `${VAR}`), to tell which keys the user wrote. */
  written: Record<string, unknown>;
  positionOf(path: ReadonlyArray<string | number>): string | undefined;
}

export function stepPlace(context: BuildContext, path: Array<string | number>, label: string): StepPlace {
  return {
    file: context.file,
    label,
    positionOf: (field) => context.positionOf([...path, ...fieldPath(field)]),
  };
}

/** `routes[1].to` → `['routes', 1, 'to']`. */
function fieldPath(field: string): Array<string | number> {
  return field
    .split(/\.|(?=\[)/)
    .filter((part) => part !== '')
    .map((part) => (/^\[\d+\]$/.test(part) ? Number(part.slice(1, -1)) : part));
}

export function position(context: BuildContext, path: Array<string | number>): { position?: string } {
  const found = context.positionOf(path);
  return found === undefined ? {} : { position: found };
}

export function failAt(place: StepPlace, field: string, what: string, hint: string): never {
  const found = place.positionOf(field);
  throw workflowInvalid(
    { file: place.file, step: place.label, field, ...(found === undefined ? {} : { position: found }) },
    what,
    hint,
  );
}

/** The written mapping at `path`, or `{}`. */
export function writtenAt(data: unknown, path: ReadonlyArray<string | number>): Record<string, unknown> {
  let node: unknown = data;
  for (const part of path) {
    if (typeof node !== 'object' || node === null) return {};
    node = (node as Record<string | number, unknown>)[part];
  }
  return typeof node === 'object' && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)
    : {};
}
