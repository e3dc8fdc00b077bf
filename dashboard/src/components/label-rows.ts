import { labelKeyProblem, labelValueProblem, MAX_LABELS, type LabelProblem, type Labels } from '@drover/shared/labels';

/**
 * The rows of a labels form (key and value inputs, added and removed one by one) and the rules
 * they are held to before they are sent: the shared label rules (`@drover/shared/labels`), each
 * problem kept with the row and the input it is about.
 */

export interface LabelRow {
  /** Stays with the row while rows are added and removed (React's key, the inputs' ids). */
  id: number;
  key: string;
  value: string;
}

/** What is wrong with one row: its key, its value, or the row as a whole (the coordinator's word). */
export interface RowProblems {
  key?: string;
  value?: string;
  row?: string;
}

let lastId = 0;

export const newRow = (key = '', value = ''): LabelRow => ({ id: ++lastId, key, value });

/** Labels as rows, sorted by key. */
export const rowsOf = (labels: Labels): LabelRow[] =>
  Object.keys(labels)
    .sort()
    .map((key) => newRow(key, labels[key]));

/** A row with neither key nor value is no label: it is left out, not refused. */
const isBlank = (row: LabelRow): boolean => row.key.trim() === '' && row.value.trim() === '';

/** The labels the rows say, each key and value without the spaces around it. */
export function labelsOf(rows: readonly LabelRow[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const row of rows) if (!isBlank(row)) labels[row.key.trim()] = row.value.trim();
  return labels;
}

/**
 * The changes `mine` made to `base` (labels set, changed or removed), made onto `theirs` instead:
 * what a form's rows become when another change replaced the labels they were made from.
 */
export function rebaseLabels(mine: Labels, base: Labels, theirs: Labels): Record<string, string> {
  const labels: Record<string, string> = { ...theirs };
  for (const key of Object.keys(base)) if (!Object.hasOwn(mine, key)) delete labels[key];
  for (const [key, value] of Object.entries(mine)) if (base[key] !== value) labels[key] = value;
  return labels;
}

/** The problems of the rows, by row id: a row without a key, a key or value the rules refuse, a key given twice. */
export function rowProblems(rows: readonly LabelRow[]): Map<number, RowProblems> {
  const problems = new Map<number, RowProblems>();
  const seen = new Set<string>();
  for (const row of rows) {
    if (isBlank(row)) continue;
    const key = row.key.trim();
    const found: RowProblems = {};
    if (key === '') found.key = 'a label needs a key';
    else if (seen.has(key)) found.key = `the key ${key} is given twice: keep one row of it`;
    else found.key = labelKeyProblem(key) ?? undefined;
    seen.add(key);
    found.value = labelValueProblem(row.value.trim()) ?? undefined;
    if (found.key || found.value) problems.set(row.id, found);
  }
  return problems;
}

/** What is wrong with the rows as a whole: more labels than an agent may carry from operators. */
export function rowsProblem(rows: readonly LabelRow[]): string | null {
  const count = Object.keys(labelsOf(rows)).length;
  return count > MAX_LABELS ? `at most ${MAX_LABELS} labels, got ${count}` : null;
}

/** A detail of a 422 `validation_failed`: where (`body.labels.site`) and what. */
type ErrorDetail = LabelProblem;

/**
 * A 422's details placed on the rows they name: `body.labels.<key>` goes to the row of that key;
 * what names no row (`body.labels` itself, a key no row has) stays in `rest`.
 */
export function serverRowProblems(
  details: readonly ErrorDetail[],
  rows: readonly LabelRow[],
  prefix = 'body.labels',
): { byRow: Map<number, RowProblems>; rest: ErrorDetail[] } {
  const byRow = new Map<number, RowProblems>();
  const rest: ErrorDetail[] = [];
  for (const detail of details) {
    const key = detail.path.startsWith(`${prefix}.`) ? detail.path.slice(prefix.length + 1) : undefined;
    const row = key === undefined ? undefined : rows.find((r) => r.key.trim() === key);
    if (!row) {
      rest.push(detail);
      continue;
    }
    const before = byRow.get(row.id)?.row;
    byRow.set(row.id, { row: before ? `${before}; ${detail.message}` : detail.message });
  }
  return { byRow, rest };
}
