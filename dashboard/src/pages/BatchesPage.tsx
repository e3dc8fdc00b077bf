import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { batchesQuery, type Batch } from '../api/batches';
import { JOB_SOURCES } from '../api/jobs';
import { triggerNamesOf, triggerNamesQuery } from '../api/triggers';
import { BatchCells } from '../components/BatchProgress';
import { ErrorMessage } from '../components/ErrorMessage';
import { ShowOlder } from '../components/ShowOlder';
import { ago } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { useOrg } from './use-org';
import { shortId } from '@drover/shared/short-id';
import { Ago } from '../components/Ago';

/**
 * The organization's batches (runs of triggers on a label selector, one job per agent), newest
 * first, 50 at a time, refreshed while on screen: each with its status and its jobs' counts. With
 * `?triggerId=` in the address (a trigger's page links here), one trigger's only.
 */
export function BatchesPage() {
  const { orgId, org, loaded } = useOrg();
  const [search] = useSearchParams();
  const triggerId = search.get('triggerId') || undefined;
  const batches = useInfiniteQuery(batchesQuery(orgId, triggerId));
  const rows = batches.data?.pages.flatMap((p) => p.items) ?? [];
  const triggers = useQuery(triggerNamesQuery(orgId, [...rows.map((batch) => batch.triggerId), triggerId]));
  if (loaded && !org) return <NotFoundPage />;
  const names = triggerNamesOf(triggers);
  const triggerName = triggerId === undefined ? undefined : names?.names.get(triggerId);
  return (
    <section aria-labelledby="batches-heading">
      <h1 id="batches-heading">Batches</h1>
      {triggerId && (
        <p role="status">
          Only the batches of{' '}
          {triggerName !== undefined ? (
            <Link to={`/orgs/${orgId}/triggers/${encodeURIComponent(triggerId)}`}>{triggerName}</Link>
          ) : names?.complete ? (
            'a deleted trigger'
          ) : (
            'one trigger'
          )}
          . <Link to={`/orgs/${orgId}/batches`}>All batches</Link>
        </p>
      )}
      <ErrorMessage error={batches.error} />
      {batches.data && rows.length === 0 && triggerId && <p>No batch of this trigger yet.</p>}
      {batches.data && rows.length === 0 && !triggerId && (
        <p>
          No batch yet. A trigger that runs on the agents a label selector matches makes a batch at each run: one job
          per agent. Choose <em>the agents matching a label selector</em> in a{' '}
          <Link to={`/orgs/${orgId}/triggers/new`}>new trigger</Link>.
        </p>
      )}
      {rows.length > 0 && (
        <div className="table-scroll">
          <table className="jobs batches">
            <caption className="hint">Newest first; the list refreshes every few seconds.</caption>
            <thead>
              <tr>
                <th scope="col">Batch</th>
                <th scope="col">Status</th>
                <th scope="col">Jobs</th>
                <th scope="col">Trigger</th>
                <th scope="col">Selector</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((batch) => (
                <BatchRow
                  key={batch.id}
                  batch={batch}
                  triggerName={names?.names.get(batch.triggerId) ?? null}
                  loaded={names?.complete ?? false}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!batches.data && !batches.error && <p className="loading">Loading…</p>}
      <ShowOlder pages={batches} what="batches" />
    </section>
  );
}

function BatchRow({ batch, triggerName, loaded }: { batch: Batch; triggerName: string | null; loaded: boolean }) {
  return (
    <tr>
      <BatchCells batch={batch} />
      <td>
        {triggerName ?? <span className="hint">{loaded ? 'deleted trigger' : shortId(batch.triggerId)}</span>}
        <br />
        <span className="hint">{JOB_SOURCES[batch.source] ?? batch.source}</span>
      </td>
      <td>
        <code>{batch.selector}</code>
      </td>
      <td>
        <Ago at={batch.createdAt} />
        {batch.endedAt && (
          <>
            <br />
            <span className="hint">
              ended <time dateTime={batch.endedAt}>{ago(batch.endedAt)}</time>
            </span>
          </>
        )}
      </td>
    </tr>
  );
}
