import { Link } from 'react-router';
import { PROGRESS_PARTS, progressOf, type Batch } from '../api/batches';

/** `3 of 5 jobs ended` */
export function endedWords(batch: Pick<Batch, 'counts' | 'jobCount'>): string {
  const { running, pending } = progressOf(batch.counts);
  const ended = batch.jobCount - running - pending;
  return `${ended} of ${batch.jobCount} job${batch.jobCount === 1 ? '' : 's'} ended`;
}

/**
 * A batch's jobs by what became of them: a bar of one segment per part (succeeded, failed,
 * running, pending, rejected, cancelled), each as wide as its share, and the same counts in words,
 * which is what assistive technologies read (the bar is hidden from them; its colours are never
 * the only way to tell). `compact` (a list's row) names only the parts that have jobs.
 */
export function BatchProgress({
  batch,
  compact = false,
}: {
  batch: Pick<Batch, 'counts' | 'jobCount'>;
  compact?: boolean;
}) {
  const parts = progressOf(batch.counts);
  const total = Math.max(batch.jobCount, 1);
  let x = 0;
  const shown = compact ? PROGRESS_PARTS.filter((p) => parts[p.key] > 0) : PROGRESS_PARTS;
  return (
    <div className={compact ? 'batch-progress compact' : 'batch-progress'}>
      {/* Lengths as SVG attributes: the page's policy allows no inline style. */}
      <svg className="progress-bar" viewBox={`0 0 ${total} 1`} preserveAspectRatio="none" aria-hidden="true">
        <rect className="progress-track" x={0} y={0} width={total} height={1} />
        {PROGRESS_PARTS.map((p) => {
          const n = parts[p.key];
          const rect = n > 0 && <rect key={p.key} className={`progress-${p.key}`} x={x} y={0} width={n} height={1} />;
          x += n;
          return rect;
        })}
      </svg>
      <ul className="progress-legend" aria-label={`Jobs by status: ${endedWords(batch)}`}>
        {shown.map((p) => (
          <li key={p.key}>
            <span className={`swatch progress-${p.key}`} aria-hidden="true" />
            {parts[p.key]} {p.words}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The first cells of a batch's row in a list: its number and workflow (linked to its page), its status, its jobs. */
export function BatchCells({ batch }: { batch: Batch }) {
  return (
    <>
      <th scope="row">
        <Link to={`/api/batches/${batch.id}`}>
          #{batch.number} {batch.workflowName}
        </Link>
      </th>
      <td>
        <span className={`status status-${batch.status}`}>{batch.status}</span>
      </td>
      <td>
        <BatchProgress batch={batch} compact />
      </td>
    </>
  );
}
