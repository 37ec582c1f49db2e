import { readFileSync } from 'node:fs';
import { SwitchboardError } from '../core/errors.js';
import { NONE, type LabelledExample } from '../core/route-types.js';
import { safeJsonParse } from '../core/safe-json.js';

/** CLINC150 labels out-of-scope rows `oos`; Switchboard calls that `none`. */
const CLINC_OUT_OF_SCOPE = 'oos';

export interface LoadDatasetOptions {
  /**
   * For CLINC150's JSON: which splits to read, e.g. `['test', 'oos_test']`.
   * @default all splits in the file
   */
  splits?: readonly string[];
}

/**
 * Reads a labelled dataset: JSONL rows `{text, expected, alternates?}` (`expected: "none"` means the
 * request must be refused), or CLINC150's JSON object of splits, each a list of `[text, intent]`.
 * The reference may name splits after a `#`: `data_full.json#test,oos_test`. A JSON file of several
 * splits must name them, so that no test split leaks into training by accident.
 */
export function loadDataset(reference: string, options: LoadDatasetOptions = {}): LabelledExample[] {
  const { file, splits: referencedSplits } = parseDatasetReference(reference);
  if (referencedSplits !== undefined) options = { ...options, splits: referencedSplits };
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SwitchboardError('DATASET_INVALID', `cannot read dataset ${file}`, {
      hint: 'check the path given to --dataset / --train',
      cause: error,
    });
  }
  const trimmed = content.trimStart();
  if (trimmed.startsWith('{') && !looksLikeJsonLines(trimmed) && !opensJsonLinesRow(trimmed)) {
    return parseClincJson(file, trimmed, options.splits);
  }
  if (options.splits !== undefined) {
    throw new SwitchboardError('DATASET_INVALID', `${file} is JSONL and has no splits`, {
      hint: 'split names apply only to CLINC150-style JSON files; drop the split selection',
    });
  }
  return parseJsonLines(file, content);
}

/** Splits `path#a,b` into the file and its split names. */
export function parseDatasetReference(reference: string): { file: string; splits?: string[] } {
  const hash = reference.lastIndexOf('#');
  if (hash <= 0) return { file: reference };
  const splits = reference
    .slice(hash + 1)
    .split(',')
    .map((split) => split.trim())
    .filter((split) => split !== '');
  return splits.length === 0
    ? { file: reference.slice(0, hash) }
    : { file: reference.slice(0, hash), splits };
}

function looksLikeJsonLines(text: string): boolean {
  const firstLine = text.split('\n', 1)[0] ?? '';
  const parsed = safeJsonParse(firstLine);
  return parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && 'text' in parsed.value;
}

/**
 * Whether the first line starts a JSONL row (`{"text": …`) even though it does not parse: a file cut
 * short is still JSONL, and its error must name the line rather than call it a JSON object of splits.
 */
function opensJsonLinesRow(text: string): boolean {
  const firstLine = text.split('\n', 1)[0] ?? '';
  return /^\{\s*"(?:text|expected|alternates)"\s*:/.test(firstLine);
}

function parseJsonLines(file: string, content: string): LabelledExample[] {
  const rows: LabelledExample[] = [];
  const lines = content.split('\n');
  for (const [index, rawLine] of lines.entries()) {
    const line = rawLine.trim();
    if (line === '') continue;
    const where = `${file}:${index + 1}`;
    const parsed = safeJsonParse(line);
    if (!parsed.ok) {
      throw new SwitchboardError('DATASET_INVALID', `${where} is not valid JSON (${parsed.error})`, {
        hint: 'each line must be a JSON object {"text": ..., "expected": ...}',
      });
    }
    const value = parsed.value as Record<string, unknown> | null;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new SwitchboardError('DATASET_INVALID', `${where} is not a JSON object`, {
        hint: 'each line must be a JSON object {"text": ..., "expected": ...}',
      });
    }
    const { text, expected, alternates } = value;
    if (typeof text !== 'string' || typeof expected !== 'string' || expected === '') {
      throw new SwitchboardError('DATASET_INVALID', `${where} needs string fields "text" and "expected"`, {
        hint: 'use "expected": "none" for requests that must be refused',
      });
    }
    if (
      alternates !== undefined &&
      !(Array.isArray(alternates) && alternates.every((a) => typeof a === 'string'))
    ) {
      throw new SwitchboardError('DATASET_INVALID', `${where}: "alternates" must be a list of skill names`);
    }
    const row: LabelledExample = { text, expected: normalizeLabel(expected) };
    if (alternates !== undefined) row.alternates = alternates.map(normalizeLabel);
    rows.push(row);
  }
  if (rows.length === 0) {
    throw new SwitchboardError('DATASET_INVALID', `${file} holds no examples`, {
      hint: 'add JSONL rows {"text": ..., "expected": ...}',
    });
  }
  return rows;
}

function parseClincJson(
  file: string,
  content: string,
  splits: readonly string[] | undefined,
): LabelledExample[] {
  const parsed = safeJsonParse(content);
  if (!parsed.ok) {
    throw new SwitchboardError('DATASET_INVALID', `${file} is not valid JSON (${parsed.error})`, {
      hint: 'a file cut short? expected CLINC150 JSON ({"train": [[text, intent], ...], ...}) or JSONL rows',
    });
  }
  if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    throw new SwitchboardError('DATASET_INVALID', `${file} is not a JSON object of splits`, {
      hint: 'expected CLINC150 JSON ({"train": [[text, intent], ...], ...}) or JSONL rows',
    });
  }
  const all = parsed.value as Record<string, unknown>;
  const available = Object.keys(all);
  if (splits === undefined && available.length > 1) {
    throw new SwitchboardError('DATASET_INVALID', `${file} holds several splits; name the ones to use`, {
      hint: `write ${file}#${available.slice(0, 2).join(',')} (splits: ${available.join(', ')})`,
    });
  }
  const names = splits ?? available;
  const rows: LabelledExample[] = [];
  for (const name of names) {
    const split = all[name];
    if (split === undefined) {
      throw new SwitchboardError('DATASET_INVALID', `${file} has no split "${name}"`, {
        hint: `available splits: ${Object.keys(all).join(', ')}`,
      });
    }
    if (!Array.isArray(split)) {
      throw new SwitchboardError('DATASET_INVALID', `${file}: split "${name}" is not a list`);
    }
    for (const [index, item] of split.entries()) {
      if (!Array.isArray(item) || typeof item[0] !== 'string' || typeof item[1] !== 'string') {
        throw new SwitchboardError('DATASET_INVALID', `${file}: ${name}[${index}] is not [text, intent]`);
      }
      rows.push({ text: item[0], expected: normalizeLabel(item[1]) });
    }
  }
  return rows;
}

function normalizeLabel(label: string): string {
  const trimmed = label.trim();
  return trimmed === CLINC_OUT_OF_SCOPE || trimmed.toLowerCase() === NONE ? NONE : trimmed;
}
