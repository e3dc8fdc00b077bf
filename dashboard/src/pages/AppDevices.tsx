import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import type { RequestBody } from '@drover/shared/api';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, apiPath } from '../api/client';
import { agentNamesQuery } from '../api/agent-pages';
import {
  bindChoicesQuery,
  boundAgentsQuery,
  DEVICE_PAGE,
  devicePagesQuery,
  devicesKey,
  type App,
  type BindChoice,
  type Binding,
  type DeviceCount,
  type DeviceFilters,
  type Release,
  type ReleaseRef,
} from '../api/ota';
import { desiredOf } from '../api/ota-impact';
import { rolloutQuery, type Rollout } from '../api/rollouts';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { SearchChoices, type ChoiceWords } from '../components/SearchChoices';
import { counted } from '@drover/shared/counted';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
import { ChannelField } from '../components/ChannelField';
import { JobNumber } from '../components/JobNumber';
import { dateTime } from '../components/time';
import { DeviceGroupForm } from './DeviceGroupForm';
import { shortId } from '@drover/shared/short-id';
import { Ago } from '../components/Ago';

const STATE_CLASS: Record<string, string> = {
  installed: 'status-success',
  idle: 'status-success',
  downloading: 'status-running',
  verifying: 'status-running',
  installing: 'status-running',
  postponed: 'status-pending',
  failed: 'status-failed',
  refused: 'status-failed',
};

const STATES: NonNullable<Binding['state']>[] = [
  'idle',
  'downloading',
  'verifying',
  'installing',
  'installed',
  'postponed',
  'failed',
  'refused',
];

/**
 * The devices bound to an application, a page at a time, found by their agent's name or their state:
 * what each runs and should run, its update job, whether it was bound by hand or by the device group;
 * the device group, bind, move, unbind. An application of thousands of devices is never read whole.
 */
export function AppDevices(props: { orgId: string; app: App; counts?: DeviceCount[]; releases?: Release[] }) {
  const { orgId, app, counts, releases } = props;
  const [filters, setFilters] = useState<DeviceFilters>({});
  const pages = useInfiniteQuery(devicePagesQuery(orgId, app.id, filters));
  const devices = pages.data?.pages.flatMap((page) => page.items);
  const matching = pages.data?.pages[0]?.total ?? 0;
  const bound = counts?.reduce((sum, g) => sum + g.devices, 0);
  const names = useQuery(
    agentNamesQuery(
      orgId,
      (devices ?? []).map((b) => b.agentId),
    ),
  );
  const nameOf = (id: string) => names.data?.get(id) ?? shortId(id);
  const filtered = Boolean(filters.q?.trim() || filters.state);
  return (
    <section aria-labelledby="devices-heading">
      <h2 id="devices-heading">Devices</h2>
      {bound === 0 && (
        <p>
          No device yet. Bind agents below, or give the application a device group: each device is told to install the
          latest published release of its channel.
        </p>
      )}
      {bound !== undefined && bound > 0 && (
        <div role="search" aria-label="Filter the devices" className="selector-filter">
          <label className="name-filter">
            Agent name
            <input
              type="search"
              value={filters.q ?? ''}
              onChange={(e) => setFilters((f) => ({ ...f, q: e.target.value || undefined }))}
              placeholder="name or hostname"
              maxLength={255}
            />
          </label>
          <label className="status-filter">
            State
            <select
              value={filters.state ?? ''}
              onChange={(e) =>
                setFilters((f) => ({ ...f, state: (e.target.value || undefined) as DeviceFilters['state'] }))
              }
            >
              <option value="">any</option>
              {STATES.map((state) => (
                <option key={state} value={state}>
                  {state}
                </option>
              ))}
            </select>
          </label>
          <p role="status" className="match-count">
            {pages.data &&
              (filtered
                ? `${matching.toLocaleString('en-US')} of ${counted(bound, 'device')} match.`
                : `${counted(bound, 'device')}.`)}
          </p>
        </div>
      )}
      <ErrorMessage error={pages.error} />
      {!pages.data && !pages.error && <p className="loading">Loading…</p>}
      {devices && devices.length === 0 && filtered && <p>No device matches these filters.</p>}
      {devices && devices.length > 0 && (
        <div className="table-scroll">
          <table className="ota">
            <caption className="hint">In bind order; refreshed every few seconds.</caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Origin</th>
                <th scope="col">Channel</th>
                <th scope="col">Current</th>
                <th scope="col">Desired</th>
                <th scope="col">State</th>
                <th scope="col">Update job</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {devices.map((b) => (
                <DeviceRow
                  key={b.id}
                  orgId={orgId}
                  app={app}
                  binding={b}
                  name={nameOf(b.agentId)}
                  published={releases && desiredOf(releases, b.channel)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {pages.hasNextPage && (
        <button type="button" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
          Show the next {DEVICE_PAGE} devices
        </button>
      )}
      <DeviceGroupForm orgId={orgId} app={app} {...(counts ? { counts } : {})} />
      <BindAgents orgId={orgId} app={app} />
    </section>
  );
}

const releaseWords = (ref: ReleaseRef | null, none: string) =>
  ref ? `${ref.version || '(no version)'} (sequence ${ref.sequence})` : none;

/**
 * A device with no desired release although its channel has a published one: that release is in a staged rollout
 * whose waves so far leave the device out (or that was aborted before reaching it), and the channel had no release
 * before it (docs/ota.md, "Staged rollouts"). `none published` would say the channel has none.
 */
function notYetWords(release: Release, rollout: Rollout | null | undefined): string {
  const words = `${release.version || '(no version)'} (sequence ${release.sequence})`;
  if (rollout?.status === 'running') return `none yet: waits for the rollout of ${words}`;
  if (rollout?.status === 'paused') return `none yet: the rollout of ${words} is paused`;
  if (rollout?.status === 'aborted') return `none: the rollout of ${words} was aborted`;
  return `none yet (${words} published)`;
}

function DeviceRow(props: {
  orgId: string;
  app: App;
  binding: Binding;
  name: string;
  /** The published release of the device's channel with the highest sequence; undefined: not read yet. */
  published: Release | null | undefined;
}) {
  const { orgId, app, binding: b, name, published } = props;
  // The same query as the release's rollout panel (read once per release, again while live).
  const notYet = !b.desired && published ? published : null;
  const rollout = useQuery({
    ...rolloutQuery(orgId, app.id, notYet?.id ?? ''),
    enabled: notYet !== null,
  });
  return (
    <tr aria-label={name}>
      <th scope="row">{name}</th>
      <td className="origin">
        {b.origin === 'selector' ? <span title={app.deviceSelector ?? undefined}>selector</span> : 'manual'}
      </td>
      <td>{b.channel}</td>
      <td className="current">{releaseWords(b.current, 'unknown')}</td>
      <td className="desired">
        {notYet ? notYetWords(notYet, rollout.data) : releaseWords(b.desired, 'none published')}
        {b.forced && (
          <>
            <br />
            <span className="status status-failed">forced</span>
          </>
        )}
      </td>
      <td>
        <span className={`status ${STATE_CLASS[b.state ?? ''] ?? ''}`}>{b.state ?? 'no report yet'}</span>
        {b.error && <p className="field-error">{b.error}</p>}
        <br />
        <span className="hint">
          {b.lastReportAt ? <Ago at={b.lastReportAt} prefix="reported" /> : 'never reported'}
        </span>
      </td>
      <td>
        {b.activeJobId && (
          <Link to={`/api/jobs/${b.activeJobId}`}>
            <JobNumber jobId={b.activeJobId} />
            in progress
          </Link>
        )}
        {!b.activeJobId && b.cancelledJobId && (
          <>
            <Link to={`/api/jobs/${b.cancelledJobId}`}>
              <JobNumber jobId={b.cancelledJobId} />
              cancelled
            </Link>
            <br />
            <span className="hint">on hold until a retry</span>
          </>
        )}
        {!b.activeJobId && !b.cancelledJobId && b.waitingForWindow && (
          <span className="status status-pending">
            waits for window
            {b.nextWindowAt && (
              <>
                {' '}
                (opens <time dateTime={b.nextWindowAt}>{dateTime(b.nextWindowAt)}</time>)
              </>
            )}
          </span>
        )}
        {!b.activeJobId && !b.cancelledJobId && !b.waitingForWindow && <span className="hint">none</span>}
      </td>
      <td>
        <DeviceActions orgId={orgId} app={app} binding={b} name={name} />
      </td>
    </tr>
  );
}

function DeviceActions({ orgId, app, binding: b, name }: { orgId: string; app: App; binding: Binding; name: string }) {
  const [mode, setMode] = useState<'idle' | 'channel' | 'unbind'>('idle');
  const [channel, setChannel] = useState(b.channel);
  const channelButton = useReturnFocus(mode === 'channel');
  const unbindButton = useReturnFocus(mode === 'unbind');
  const queryClient = useQueryClient();
  const path = apiPath`/orgs/${orgId}/apps/${app.id}/devices/${b.id}`;
  const done = () => {
    setMode('idle');
    void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps', app.id] });
  };
  const move = useMutation({ mutationFn: () => api<Binding>('PATCH', path, { body: { channel } }), onSuccess: done });
  const unbind = useMutation({ mutationFn: () => api<void>('DELETE', path), onSuccess: done });
  const retry = useMutation({
    mutationFn: () => api<Binding>('POST', apiPath`/orgs/${orgId}/apps/${app.id}/devices/${b.id}/reconcile`),
    onSuccess: done,
  });
  const idPrefix = `dev-${b.id}`;
  const errors = fieldErrors(move.error, ['channel'], 'body', idPrefix);
  if (mode === 'channel') {
    const submit = (event: FormEvent) => {
      event.preventDefault();
      move.mutate();
    };
    return (
      <Confirm onSubmit={submit} onCancel={() => setMode('idle')} noValidate className="inline-form">
        <FormError error={move.error} errors={errors} />
        <div className="field">
          <label htmlFor={errors.props('channel').id}>Channel of {name}</label>
          <input {...errors.props('channel')} value={channel} onChange={(e) => setChannel(e.target.value)} />
          <FieldError errors={errors} field="channel" idPrefix={idPrefix} />
        </div>
        <button type="submit" disabled={move.isPending}>
          Save
        </button>
        <button type="button" onClick={() => setMode('idle')}>
          Cancel
        </button>
      </Confirm>
    );
  }
  if (mode === 'unbind') {
    return (
      <Confirm label={`Unbind ${name}`} onCancel={() => setMode('idle')}>
        <p>
          Unbind {name} from {app.slug}? It keeps what it installed and gets no more updates of this application; an
          update job it has not taken yet is cancelled.
        </p>
        <button type="button" className="danger" onClick={() => unbind.mutate()} disabled={unbind.isPending}>
          Unbind
        </button>
        <button type="button" onClick={() => setMode('idle')}>
          Keep it
        </button>
        <ErrorMessage error={unbind.error} />
      </Confirm>
    );
  }
  return (
    <div className="actions wrap">
      <button
        type="button"
        ref={channelButton}
        aria-label={`Change the channel of ${name}`}
        onClick={() => setMode('channel')}
      >
        Channel
      </button>
      <button
        type="button"
        aria-label={`Retry ${name}`}
        title="Forget failures and holds, and evaluate the device again"
        onClick={() => retry.mutate()}
        disabled={retry.isPending}
      >
        Retry
      </button>
      {b.origin === 'manual' && (
        <button type="button" ref={unbindButton} aria-label={`Unbind ${name}`} onClick={() => setMode('unbind')}>
          Unbind
        </button>
      )}
      <ErrorMessage error={retry.error} />
    </div>
  );
}

const BIND_WORDS: ChoiceWords = {
  find: 'Find agents by name',
  placeholder: 'Find by name or hostname',
  one: 'agent',
  many: 'agents',
};

/** Bind agents by hand: those found by name on the coordinator, 50 at a time, bound ones and revoked ones not offered. */
function BindAgents(props: { orgId: string; app: App }) {
  const { orgId, app } = props;
  const [chosen, setChosen] = useState<BindChoice[]>([]);
  const [channel, setChannel] = useState('');
  // An agent ticked here that another way bound meanwhile (the device group, another member) leaves
  // the choice: the form never sends (nor counts) an agent it does not offer.
  const boundNow = useQuery(
    boundAgentsQuery(
      orgId,
      app.id,
      chosen.map((a) => a.id),
    ),
  );
  const bound = boundNow.data;
  if (bound && chosen.some((a) => bound.has(a.id))) setChosen(chosen.filter((a) => !bound.has(a.id)));
  const queryClient = useQueryClient();
  const bind = useMutation({
    mutationFn: () => {
      const body: RequestBody<'bindDevice'> = { agentIds: chosen.map((a) => a.id) };
      if (channel.trim() !== '') body.channel = channel.trim();
      return api<Binding[]>('POST', apiPath`/orgs/${orgId}/apps/${app.id}/devices`, { body });
    },
    onSuccess: () => {
      setChosen([]);
      void queryClient.invalidateQueries({ queryKey: devicesKey(orgId, app.id) });
    },
  });
  const errors = fieldErrors(bind.error, ['agentIds', 'channel'], 'body', 'bind');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    bind.mutate();
  };
  const toggle = (agent: BindChoice, on: boolean) =>
    setChosen((c) => (on ? [...c.filter((a) => a.id !== agent.id), agent] : c.filter((a) => a.id !== agent.id)));
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="bind-heading">
      <h3 id="bind-heading">Bind agents</h3>
      <FormError error={bind.error} errors={errors} />
      <div className="form-grid">
        <fieldset className="field">
          <legend>Agents</legend>
          <SearchChoices
            search={(text) => bindChoicesQuery(orgId, app.id, text)}
            words={BIND_WORDS}
            chosen={chosen}
            onToggle={toggle}
            offered={(agent) => !agent.bound && agent.status !== 'revoked'}
            noneFound={(text) => `No agent has “${text}” in its name or hostname.`}
            noneAtAll="This organization has no agent yet."
            noneOffered="Each of these agents is bound to this application already, or revoked."
          />
          <FieldError errors={errors} field="agentIds" idPrefix="bind" />
        </fieldset>
        <ChannelField
          value={channel}
          onChange={setChannel}
          defaultChannel={app.defaultChannel}
          errors={errors}
          idPrefix="bind"
        />
      </div>
      <button type="submit" disabled={bind.isPending || chosen.length === 0}>
        Bind {chosen.length === 1 ? '1 agent' : `${chosen.length} agents`}
      </button>
    </form>
  );
}
