import { SwitchboardError } from '../../core/errors.js';

/** Where in a workflow file a problem is: the step (or group) and the field, as the user wrote them. */
export interface ProblemPlace {
  file: string;
  /** `agents[2] "reviewer"`, `for_each[0] "reviews"`, `workflow`. */
  step?: string;
  /** Dotted key path inside the step: `routes[1].to`, `runtime.provider`. */
  field?: string;
  /** `12:5` when the position in the file is known. */
  position?: string;
}

/**
 * A one-line WORKFLOW_INVALID error: `<file>[:line:col]: <step>: field "<field>": <what>`, with the
 * fix in `hint` and the place in `details` for `--json` readers.
 */
export function workflowInvalid(place: ProblemPlace, what: string, hint: string): SwitchboardError {
  const where = [
    place.position === undefined ? place.file : `${place.file}:${place.position}`,
    place.step,
    place.field === undefined ? undefined : `field "${place.field}"`,
  ]
    .filter((part) => part !== undefined)
    .join(': ');
  return new SwitchboardError('WORKFLOW_INVALID', `${where}: ${oneLine(what)}`, {
    hint: oneLine(hint),
    details: { file: place.file, step: place.step, field: place.field, position: place.position },
  });
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
