import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import type { RequestBody } from '@drover/shared/api';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, apiPath } from '../api/client';
import { agentsQuery } from '../api/queries';
import { devicesQuery, type App, type Binding, type Release, type ReleaseRef } from '../api/ota';
import { desiredOf } from '../api/ota-impact';
import { rolloutQuery, type Rollout } from '../api/rollouts';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { AgentChoices } from '../components/AgentChoices';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
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

/**
 * The devices bound to an application: what each runs and should run, its update job, whether it
 * was bound by hand or by the device group; the device group, bind, move, unbind.
 */
export function AppDevices(props: { orgId: string; app: App; devices?: Binding[]; releases?: Release[] }) {
  const { orgId, app, devices, releases } = props;
  const agents = useQuery(agentsQuery(orgId));
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const nameOf = (id: string) => names.get(id) ?? shortId(id);
  return (
    <section aria-labelledby="devices-heading">
      <h2 id="devices-heading">Devices</h2>
      {devices && devices.length === 0 && (
        <p>
          No device yet. Bind agents below, or give the application a device group: each device is told to install the
          latest published release of its channel.
        </p>
      )}
      {!devices && <p className="loading">Loading…</p>}
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
      <DeviceGroupForm orgId={orgId} app={app} agents={agents.data} devices={devices} />
      <BindAgents
        orgId={orgId}
        app={app}
        candidates={(agents.data ?? []).filter(
          (a) => a.status !== 'revoked' && !(devices ?? []).some((b) => b.agentId === a.id),
        )}
      />
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

function BindAgents(props: { orgId: string; app: App; candidates: { id: string; name: string }[] }) {
  const { orgId, app, candidates } = props;
  const [chosen, setChosen] = useState<string[]>([]);
  const [channel, setChannel] = useState('');
  // An agent ticked here that another way bound meanwhile (the device group, another member) or that was revoked
  // leaves the list: it is no longer chosen, so the form never sends (nor counts) an agent it does not show.
  const candidateIds = new Set(candidates.map((a) => a.id));
  if (chosen.some((id) => !candidateIds.has(id))) setChosen(chosen.filter((id) => candidateIds.has(id)));
  const queryClient = useQueryClient();
  const bind = useMutation({
    mutationFn: () => {
      const body: RequestBody<'bindDevice'> = { agentIds: chosen };
      if (channel.trim() !== '') body.channel = channel.trim();
      return api<Binding[]>('POST', apiPath`/orgs/${orgId}/apps/${app.id}/devices`, { body });
    },
    onSuccess: () => {
      setChosen([]);
      void queryClient.invalidateQueries({ queryKey: devicesQuery(orgId, app.id).queryKey });
    },
  });
  const errors = fieldErrors(bind.error, ['agentIds', 'channel'], 'body', 'bind');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    bind.mutate();
  };
  const toggle = (id: string, on: boolean) => setChosen((c) => (on ? [...c, id] : c.filter((x) => x !== id)));
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="bind-heading">
      <h3 id="bind-heading">Bind agents</h3>
      <FormError error={bind.error} errors={errors} />
      {candidates.length === 0 ? (
        <p className="hint">Every agent of the organization is bound to this application (revoked ones cannot be).</p>
      ) : (
        <div className="form-grid">
          <fieldset className="field">
            <legend>Agents</legend>
            <AgentChoices
              agents={candidates}
              chosen={chosen}
              onToggle={toggle}
              noneFound={(text) => `No agent to bind has “${text}” in its name.`}
            />
            <FieldError errors={errors} field="agentIds" idPrefix="bind" />
          </fieldset>
          <div className="field">
            <label htmlFor={errors.props('channel').id}>Channel</label>
            <input
              {...errors.props('channel')}
              value={channel}
              onChange={(e) => setChannel(e.target.value)}
              placeholder={app.defaultChannel}
            />
            <span className="hint">empty: the application&apos;s default ({app.defaultChannel})</span>
            <FieldError errors={errors} field="channel" idPrefix="bind" />
          </div>
        </div>
      )}
      {candidates.length > 0 && (
        <button type="submit" disabled={bind.isPending || chosen.length === 0}>
          Bind {chosen.length === 1 ? '1 agent' : `${chosen.length} agents`}
        </button>
      )}
    </form>
  );
}
