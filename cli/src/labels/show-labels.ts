import { formatLabels, type Labels } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import { formatTable } from '../output/table.js';

type Agent = Schema<'Agent'>;

/** The widest LABELS cell of `drover agents`, in characters. */
export const LABELS_CELL_WIDTH = 60;

/**
 * Labels in a table cell: `formatLabels` (sorted, `k=v,k2=v2`) when it fits `width`, else the
 * first labels that fit and `…+N`, N the labels left out; a single label too long for the cell is
 * cut with `…`. Empty labels are an empty cell.
 */
export function labelsCell(labels: Labels, width = LABELS_CELL_WIDTH): string {
  const all = formatLabels(labels);
  if (all.length <= width) return all;
  const items = all.split(','); // neither keys nor values hold a comma
  let shown = '';
  let count = 0;
  for (const item of items) {
    const next = count === 0 ? item : `${shown},${item}`;
    const rest = `,…+${items.length - count - 1}`;
    if (next.length + rest.length > width) break;
    shown = next;
    count += 1;
  }
  if (count === 0) {
    const more = items.length > 1 ? `,…+${items.length - 1}` : '';
    return `${items[0]!.slice(0, width - 1 - more.length)}…${more}`;
  }
  return `${shown},…+${items.length - count}`;
}

/**
 * An agent's labels as `KEY VALUE SOURCE` rows, one per label it carries: `reported` (by the
 * agent), `operator`, or `operator (reported: <value>)` when an operator's label hides the one the
 * agent reports.
 */
export function formatAgentLabels(agent: Pick<Agent, 'labels' | 'reportedLabels' | 'operatorLabels'>): string {
  const keys = Object.keys(agent.labels).sort();
  if (keys.length === 0) return 'No labels.\n';
  const rows = keys.map((key) => {
    const reported = Object.hasOwn(agent.reportedLabels, key) ? agent.reportedLabels[key] : undefined;
    const source = !Object.hasOwn(agent.operatorLabels, key)
      ? 'reported'
      : reported === undefined
        ? 'operator'
        : `operator (reported: ${reported === '' ? '""' : reported})`;
    return [key, agent.labels[key] === '' ? '""' : agent.labels[key], source];
  });
  return formatTable(['KEY', 'VALUE', 'SOURCE'], rows);
}
