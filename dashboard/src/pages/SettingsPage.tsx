import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { api, ApiError, apiPath } from '../api/client';
import {
  DELETED_KINDS,
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  RETENTION_FIELDS,
  retentionQuery,
  type OrgView,
  type RetentionChange,
  type RetentionField,
  type RetentionView,
} from '../api/retention';
import { humanSize } from '../components/bytes';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError, unreadableNumbers } from '../components/FieldErrors';
import { ago, dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';

/**
 * The organization's settings: its retention (what the coordinator deletes once it is older, each
 * value the organization's own or the coordinator's default), which owners change; the database's
 * size; the coordinator's last retention sweep. Members read it all.
 */
export function SettingsPage() {
  const { orgId, org, loaded } = useOrg();
  const view = useQuery(retentionQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const mayManage = allows(org, 'org.retention');
  return (
    <section aria-labelledby="settings-heading">
      <h1 id="settings-heading">Settings</h1>
      <ErrorMessage error={view.error} />
      {!view.data && !view.error && <p className="loading">Loading…</p>}
      {view.data && (
        <>
          <Retention orgId={orgId} view={view.data} mayManage={mayManage} />
          <Database database={view.data.database} />
          <LastSweep sweep={view.data.lastSweep} />
        </>
      )}
    </section>
  );
}

const days = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'day' : 'days'}`;

function Retention({ orgId, view, mayManage }: { orgId: string; view: RetentionView; mayManage: boolean }) {
  return (
    <section aria-labelledby="retention-heading">
      <h2 id="retention-heading">Retention</h2>
      <p>
        The coordinator deletes what is older than this in the background, every few minutes; a lowered value applies to
        existing data at the next sweep. Open jobs, the newest job and batch, and the job a device still runs as its
        update always stay; files follow their own expiry.
      </p>
      <table className="members retention">
        <thead>
          <tr>
            <th scope="col">What</th>
            <th scope="col">Kept for</th>
          </tr>
        </thead>
        <tbody>
          {RETENTION_FIELDS.map(({ field, label, what }) => {
            const own = view.overrides[field];
            return (
              <tr key={field} aria-label={label}>
                <th scope="row">
                  {label}
                  <br />
                  <span className="hint">{what}</span>
                </th>
                <td>
                  {days(view.retention[field])}{' '}
                  <span className="hint">
                    {own === null
                      ? '(coordinator default)'
                      : `(this organization's; the coordinator's default is ${days(view.defaults[field])})`}
                  </span>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {mayManage ? (
        <RetentionForm key={orgId} orgId={orgId} view={view} />
      ) : (
        <p className="hint">Only an owner changes the retention.</p>
      )}
    </section>
  );
}

type Draft = Record<RetentionField, string>;

const draftOf = (view: RetentionView): Draft =>
  Object.fromEntries(
    RETENTION_FIELDS.map(({ field }) => [field, view.overrides[field] === null ? '' : String(view.overrides[field])]),
  ) as Draft;

const FIELD_NAMES = RETENTION_FIELDS.map((f) => f.field);

/** An owner's four values; an empty field returns the value to the coordinator's default (null). */
function RetentionForm({ orgId, view }: { orgId: string; view: RetentionView }) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(view));
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (unreadable: ApiError | null) => {
      // A number of days the browser cannot read would be sent as none: the coordinator's default.
      if (unreadable) throw unreadable;
      const retention = Object.fromEntries(
        RETENTION_FIELDS.map(({ field }) => [field, draft[field].trim() === '' ? null : Number(draft[field])]),
      ) as RetentionChange;
      return api<OrgView>('PATCH', apiPath`/orgs/${orgId}`, { body: { retention } });
    },
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: retentionQuery(orgId).queryKey }),
  });
  const errors = fieldErrors(save.error, FIELD_NAMES, 'body.retention', 'retention');
  const set = (field: RetentionField, value: string) => {
    save.reset();
    setDraft((d) => ({ ...d, [field]: value }));
  };
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    save.mutate(unreadableNumbers(event.currentTarget, 'body.retention', 'retention'));
  };
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="retention-form-heading">
      <h3 id="retention-form-heading">Change the retention</h3>
      <p className="hint">
        Whole days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}. Leave a field empty, or choose{' '}
        <strong>Use default</strong>, for the coordinator&apos;s default.
      </p>
      <FormError error={save.error} errors={errors} />
      {save.isSuccess && (
        <p role="status" className="hint">
          Saved: the next sweep deletes what is older.
        </p>
      )}
      <div className="form-grid">
        {RETENTION_FIELDS.map(({ field, label }) => (
          <div className="field" key={field}>
            <label htmlFor={errors.props(field).id}>{label} (days)</label>
            <div className="days-input">
              <input
                {...errors.props(field)}
                type="number"
                min={MIN_RETENTION_DAYS}
                max={MAX_RETENTION_DAYS}
                step={1}
                placeholder={String(view.defaults[field])}
                value={draft[field]}
                onChange={(e) => set(field, e.target.value)}
              />
              {draft[field] !== '' && (
                <button type="button" onClick={() => set(field, '')} aria-label={`Use default: ${label.toLowerCase()}`}>
                  Use default
                </button>
              )}
            </div>
            <span className="hint">
              {draft[field] === '' ? "the coordinator's default" : 'default'}: {days(view.defaults[field])}
            </span>
            <FieldError errors={errors} field={field} idPrefix="retention" />
          </div>
        ))}
      </div>
      <div className="form-actions">
        <button type="submit" disabled={save.isPending}>
          Save retention
        </button>
      </div>
    </form>
  );
}

function Database({ database }: { database: RetentionView['database'] }) {
  const sqlite = database.engine === 'sqlite';
  return (
    <section aria-labelledby="database-heading">
      <h2 id="database-heading">Database</h2>
      <p className="hint">The coordinator&apos;s database, shared by every organization on it.</p>
      <dl className="facts">
        <dt>Engine</dt>
        <dd>{sqlite ? 'SQLite' : 'PostgreSQL'}</dd>
        <dt>Size on disk</dt>
        <dd>{humanSize(database.bytes)}</dd>
        {database.freeBytes !== null && (
          <>
            <dt>Free inside the file</dt>
            <dd>{humanSize(database.freeBytes)}</dd>
          </>
        )}
      </dl>
      {sqlite ? (
        <p className="hint">
          Deleted rows leave free pages inside the SQLite file that new rows reuse; the file does not shrink. To give
          the space back to the disk, the operator stops the coordinator and runs <code>VACUUM</code> on the file (
          <code>sqlite3 /var/lib/drover/drover.sqlite VACUUM</code>; it needs free disk space as large as the database).
        </p>
      ) : (
        <p className="hint">
          On PostgreSQL, autovacuum makes the space of deleted rows reusable; <code>VACUUM FULL</code> gives it back to
          the disk but locks the tables.
        </p>
      )}
    </section>
  );
}

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US')} ms`;

function LastSweep({ sweep }: { sweep: RetentionView['lastSweep'] }) {
  return (
    <section aria-labelledby="sweep-heading">
      <h2 id="sweep-heading">Last retention sweep</h2>
      {sweep === null ? (
        <p>No sweep yet since the coordinator started: the first runs about 30 seconds after it starts.</p>
      ) : (
        <>
          <p className="hint">
            The coordinator&apos;s last sweep since it started: the rows it deleted of this organization, and how long
            the whole sweep took.
          </p>
          <dl className="facts">
            <dt>Started</dt>
            <dd>
              <time dateTime={sweep.startedAt}>{dateTime(sweep.startedAt)}</time> ({ago(sweep.startedAt)})
            </dd>
            <dt>Took</dt>
            <dd>
              {ms(sweep.durationMs)} in {sweep.batches.toLocaleString('en-US')}{' '}
              {sweep.batches === 1 ? 'batch' : 'batches'}
            </dd>
            <dt>Longest batch</dt>
            <dd>{ms(sweep.longestBatchMs)} (the longest the database was held)</dd>
          </dl>
          <table className="members sweep" aria-label="Rows deleted by the last sweep">
            <thead>
              <tr>
                <th scope="col">Deleted</th>
                <th scope="col">Rows</th>
              </tr>
            </thead>
            <tbody>
              {DELETED_KINDS.map(({ kind, label }) => (
                <tr key={kind}>
                  <th scope="row">{label}</th>
                  <td>{sweep.deleted[kind].toLocaleString('en-US')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
