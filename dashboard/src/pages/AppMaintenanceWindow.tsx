import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useEffect, useState, type FormEvent } from 'react';
import { api, apiPath, type ApiError } from '../api/client';
import { windowPreviewQuery, type App, type NextWindow } from '../api/ota';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError, unreadableNumbers } from '../components/FieldErrors';
import { localWords, utcWords } from '../components/trigger-words';

const FIELDS = ['cron', 'timezone', 'durationMinutes'] as const;
/** How long the editor waits after a keystroke before it asks the coordinator for the next windows. */
const PREVIEW_DELAY_MS = 300;

/** `90 minutes`, `2 h`, `1 day 6 h` */
export function durationWords(minutes: number): string {
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  if (days === 0 && hours === 0) return `${rest} minute${rest === 1 ? '' : 's'}`;
  const parts = [days > 0 ? `${days} day${days === 1 ? '' : 's'}` : '', hours > 0 ? `${hours} h` : ''];
  if (rest > 0) parts.push(`${rest} min`);
  return parts.filter(Boolean).join(' ');
}

/** The windows, each as its opening and end in UTC, and its opening in the window's zone. */
function WindowList({
  windows,
  zone,
  label,
  now,
}: {
  windows: NextWindow[];
  zone: string;
  label: string;
  now: number;
}) {
  return (
    <ol aria-label={label}>
      {windows.map((w) => (
        <li key={w.opensAt}>
          <time dateTime={w.opensAt}>{utcWords(w.opensAt)}</time> to{' '}
          <time dateTime={w.closesAt}>{utcWords(w.closesAt)}</time>
          {Date.parse(w.opensAt) <= now && <strong> (open now)</strong>}
          {zone !== 'UTC' && (
            <>
              <br />
              <span className="hint">opens {localWords(w.localOpensAt, zone)}</span>
            </>
          )}
        </li>
      ))}
    </ol>
  );
}

/**
 * An application's maintenance window (docs/ota.md, "Maintenance windows"): what it is and its
 * next windows; an editor that shows the next windows as the operator types (computed by the
 * coordinator, with the parser it schedules with); removing it after a confirmation.
 */
export function AppMaintenanceWindow({ orgId, app }: { orgId: string; app: App }) {
  const [mode, setMode] = useState<'view' | 'edit' | 'remove'>('view');
  const editButton = useReturnFocus(mode === 'edit');
  const removeButton = useReturnFocus(mode === 'remove');
  const queryClient = useQueryClient();
  const path = apiPath`/orgs/${orgId}/apps/${app.id}`;
  const done = () => {
    setMode('view');
    void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps'] });
  };
  const remove = useMutation({
    mutationFn: () => api<App>('PATCH', path, { body: { maintenanceWindow: null } }),
    onSuccess: done,
  });
  const w = app.maintenanceWindow;
  return (
    <section aria-labelledby="window-heading" className="panel">
      <h2 id="window-heading">Maintenance window</h2>
      {mode === 'edit' ? (
        <WindowEditor orgId={orgId} app={app} onDone={done} onCancel={() => setMode('view')} />
      ) : (
        <>
          {w ? (
            <>
              <p>
                Optional updates start only inside a window: one opens at <code>{w.cron}</code> ({w.timezone}) and stays
                open {durationWords(w.durationMinutes)}. Mandatory and forced updates start at once; an update job that
                started runs on past the end of its window.
              </p>
              <WindowList windows={app.nextWindows} zone={w.timezone} label="Next windows" now={Date.now()} />
            </>
          ) : (
            <p>None: updates start as soon as a release is published.</p>
          )}
          {mode === 'remove' ? (
            <Confirm label="Remove the maintenance window" onCancel={() => setMode('view')}>
              <p>Remove the window? Updates held for it start at once.</p>
              <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
                Remove window
              </button>
              <button type="button" onClick={() => setMode('view')}>
                Keep it
              </button>
              <ErrorMessage error={remove.error} />
            </Confirm>
          ) : (
            <div className="actions">
              <button type="button" ref={editButton} onClick={() => setMode('edit')}>
                {w ? 'Edit window' : 'Set a maintenance window'}
              </button>
              {w && (
                <button type="button" ref={removeButton} onClick={() => setMode('remove')}>
                  Remove window
                </button>
              )}
            </div>
          )}
        </>
      )}
    </section>
  );
}

interface Draft {
  cron: string;
  timezone: string;
  durationMinutes: string;
}

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

function WindowEditor(props: { orgId: string; app: App; onDone: () => void; onCancel: () => void }) {
  const { orgId, app } = props;
  const w = app.maintenanceWindow;
  const [draft, setDraft] = useState<Draft>({
    cron: w?.cron ?? '0 2 * * *',
    timezone: w?.timezone ?? 'UTC',
    durationMinutes: String(w?.durationMinutes ?? 120),
  });
  const asked = useDebounced(draft, PREVIEW_DELAY_MS);
  const complete = asked.cron.trim() !== '' && asked.timezone.trim() !== '' && asked.durationMinutes.trim() !== '';
  const preview = useQuery({
    ...windowPreviewQuery(orgId, asked),
    enabled: complete,
    placeholderData: keepPreviousData,
    retry: false,
  });
  const save = useMutation({
    mutationFn: (unreadable: ApiError | null) => {
      // A duration the browser cannot read (`1e`) is "" as if empty: it would be sent as 0.
      if (unreadable) throw unreadable;
      const duration = draft.durationMinutes.trim();
      // An empty duration is left out: the coordinator says it is required, at its field (Number("") would be 0).
      return api<App>('PATCH', apiPath`/orgs/${orgId}/apps/${app.id}`, {
        body: {
          maintenanceWindow: {
            cron: draft.cron,
            timezone: draft.timezone.trim(),
            ...(duration === '' ? {} : { durationMinutes: Number(duration) }),
          },
        },
      });
    },
    onSuccess: props.onDone,
  });
  // The save's refusal once asked; until then what the preview says of the fields as they are typed.
  const errors = save.error
    ? fieldErrors(save.error, FIELDS, 'body.maintenanceWindow', 'win')
    : fieldErrors(preview.isPlaceholderData ? null : preview.error, FIELDS, 'querystring', 'win');
  const set = (field: keyof Draft, value: string) => {
    save.reset();
    setDraft((d) => ({ ...d, [field]: value }));
  };
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    save.mutate(unreadableNumbers(event.currentTarget, 'body.maintenanceWindow', 'win'));
  };
  const field = (name: keyof Draft, label: string, hint: string, type = 'text') => (
    <div className="field">
      <label htmlFor={errors.props(name).id}>{label}</label>
      <input
        {...errors.props(name)}
        type={type}
        {...(type === 'number' ? { min: 1, max: 10080, step: 1, 'data-example': '120' } : {})}
        value={draft[name]}
        onChange={(e) => set(name, e.target.value)}
      />
      <span className="hint">{hint}</span>
      <FieldError errors={errors} field={name} idPrefix="win" />
    </div>
  );
  const shown = preview.data && !preview.error ? preview.data : null;
  return (
    <form onSubmit={submit} noValidate aria-label="Maintenance window">
      <FormError error={save.error} errors={errors} />
      <div className="form-grid">
        {field('cron', 'Cron expression', 'five fields, as a cron trigger: minute hour day-of-month month day-of-week')}
        {field('timezone', 'Time zone', 'an IANA zone name such as Europe/Berlin')}
        {field(
          'durationMinutes',
          'Duration (minutes)',
          'how long each window stays open: 1 to 10080 (7 days)',
          'number',
        )}
      </div>
      <div role="status" aria-live="polite">
        {!complete && <p className="hint">Fill in the three fields to see the next windows.</p>}
        {complete && shown && (
          <>
            <p>Next windows with this setting:</p>
            <WindowList
              windows={shown.nextWindows}
              zone={shown.maintenanceWindow.timezone}
              label="Next windows (preview)"
              now={Date.now()}
            />
          </>
        )}
        {complete && preview.error !== null && !preview.isFetching && (
          <p className="hint">No windows to show until the fields are fixed.</p>
        )}
      </div>
      <div className="actions">
        <button type="submit" disabled={save.isPending}>
          Save window
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
