import type { GitHubIssue } from './client.js';
import { formatIssueReference, type IssueReference } from './issue-ref.js';

/** A markdown task-list item: `- [ ] text`, `* [x] text`, `1. [ ] text`. */
const CHECKLIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]\s+(.+?)\s*$/;

/** The items of the markdown checklists in an issue body, in order (ticked ones too: they are still the criteria). */
export function checklistItems(body: string): string[] {
  const items: string[] = [];
  let fenced = false;
  for (const line of body.split(/\r?\n/)) {
    // A checklist shown inside a code block is an example, not the issue's own list.
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = CHECKLIST_ITEM.exec(line);
    if (match !== null) items.push(match[1] as string);
  }
  return items;
}

/**
 * The task fields an issue gives (before validation by `parseTask`): id `issue-N`, the title, the body
 * (and labels) as the description, the checklist as acceptance, the issue as provenance, and merge mode
 * `pr` — the change comes back as a pull request, and the issue hears how it went.
 */
export function taskFieldsFromIssue(reference: IssueReference, issue: GitHubIssue): Record<string, unknown> {
  const description = [
    issue.body.trim(),
    issue.labels.length === 0 ? '' : `Labels: ${issue.labels.join(', ')}`,
    `From GitHub issue ${formatIssueReference(reference)} (${issue.url}).`,
  ]
    .filter((part) => part !== '')
    .join('\n\n');
  const fields: Record<string, unknown> = {
    id: `issue-${issue.number}`,
    title: issue.title,
    description,
    issue: formatIssueReference(reference),
    merge: 'pr',
  };
  const acceptance = checklistItems(issue.body);
  if (acceptance.length > 0) fields['acceptance'] = acceptance;
  return fields;
}
