import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type RefObject } from 'react';
import { Link, useParams } from 'react-router';
import { api, ApiError, apiPath } from '../api/client';
import {
  appQuery,
  byteSize,
  deviceCountsQuery,
  releasesQuery,
  type App,
  type DeviceCount,
  type Release,
} from '../api/ota';
import { releaseCounts, yankImpact, type Impact } from '../api/ota-impact';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { ReadOnly } from '../components/ReadOnly';
import { dateTime } from '../components/time';
import { AppDevices } from './AppDevices';
import { AppMaintenanceWindow } from './AppMaintenanceWindow';
import { AppReleaseKeys } from './AppReleaseKeys';
import { NewRelease } from './NewRelease';
import { NotFoundPage } from './NotFoundPage';
import { PublishDialog } from './PublishDialog';
import { RolloutBadge, RolloutRow, RolloutToggle, useReleaseRollout } from './RolloutPanel';
import { allows, useOrg } from './use-org';

/**
 * An application: its releases (publish, at once or with a rollout plan; yank; create from a file),
 * their rollouts, and its devices.
 */
export function AppPage() {
  const { orgId, org, loaded } = useOrg();
  const { appId = '' } = useParams();
  const app = useQuery(appQuery(orgId, appId));
  const releases = useQuery(releasesQuery(orgId, appId));
  // The devices counted, not listed: the releases' counts and what a publish or a yank does.
  const devices = useQuery(deviceCountsQuery(orgId, appId));
  if ((loaded && !org) || (app.error instanceof ApiError && app.error.statusCode === 404)) return <NotFoundPage />;
  if (app.error) return <ErrorMessage error={app.error} />;
  if (!app.data) return <p className="loading">Loading…</p>;
  const a = app.data;
  const readOnly = !allows(org, 'releases.publish');
  return (
    <section aria-labelledby="app-heading">
      <h1 id="app-heading">{a.slug}</h1>
      <p>
        <Link to={`/orgs/${orgId}/apps`}>All applications</Link>
      </p>
      <dl className="facts">
        <dt>Update workflow</dt>
        <dd>
          <code>{a.updateWorkflowName}</code>
        </dd>
        <dt>Default channel</dt>
        <dd>{a.defaultChannel}</dd>
        <dt>Created</dt>
        <dd>{dateTime(a.createdAt)}</dd>
      </dl>
      {/* A viewer reads it all, rollouts included; the controls that change something are disabled. */}
      <ReadOnly when={readOnly}>
        <AppMaintenanceWindow orgId={orgId} app={a} />
        <AppReleaseKeys orgId={orgId} app={a} />
      </ReadOnly>
      <ErrorMessage error={releases.error ?? devices.error} />
      <Releases orgId={orgId} app={a} releases={releases.data} devices={devices.data} readOnly={readOnly} />
      {!readOnly && <NewRelease orgId={orgId} app={a} />}
      <ReadOnly when={readOnly}>
        <AppDevices orgId={orgId} app={a} counts={devices.data} releases={releases.data} />
      </ReadOnly>
    </section>
  );
}

const STATUS_CLASS: Record<Release['status'], string> = {
  draft: 'status-pending',
  published: 'status-success',
  yanked: 'status-failed',
};

const RELEASE_COLUMNS = 7;

function Releases(props: {
  orgId: string;
  app: App;
  releases?: Release[];
  devices?: DeviceCount[];
  readOnly: boolean;
}) {
  const { releases, devices } = props;
  return (
    <section aria-labelledby="releases-heading">
      <h2 id="releases-heading">Releases</h2>
      {releases && releases.length === 0 && (
        <p>No release yet. Create one below from an artifact file; it starts as a draft until you publish it.</p>
      )}
      {!releases && <p className="loading">Loading…</p>}
      {releases && releases.length > 0 && (
        <div className="table-scroll">
          <table className="ota">
            <caption className="hint">
              Newest first. Devices: how many run the release, are updating to it, or failed to install it.
            </caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Channel</th>
                <th scope="col">Status</th>
                <th scope="col">Artifact</th>
                <th scope="col">Dates</th>
                <th scope="col">Devices</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {releases.map((r) => (
                <ReleaseRow key={r.id} {...props} releases={releases} devices={devices ?? []} release={r} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function ReleaseRow(props: {
  orgId: string;
  app: App;
  releases: Release[];
  devices: DeviceCount[];
  release: Release;
  readOnly: boolean;
}) {
  const { release: r, devices } = props;
  const counts = releaseCounts(devices, r);
  const [publishing, setPublishing] = useState(false);
  const publishButton = useReturnFocus(publishing);
  const rollout = useReleaseRollout(props.orgId, props.app.id, r, props.releases);
  return (
    <>
      <ReleaseCells
        {...props}
        counts={counts}
        rollout={rollout}
        publishing={publishing}
        onPublish={() => setPublishing(true)}
        publishButton={publishButton}
      />
      {publishing && (
        <tr className="release-detail">
          <td colSpan={RELEASE_COLUMNS}>
            <PublishDialog {...props} onClose={() => setPublishing(false)} />
          </td>
        </tr>
      )}
      <RolloutRow orgId={props.orgId} state={rollout} columns={RELEASE_COLUMNS} readOnly={props.readOnly} />
    </>
  );
}

function ReleaseCells(
  props: Parameters<typeof ReleaseRow>[0] & {
    counts: ReturnType<typeof releaseCounts>;
    rollout: ReturnType<typeof useReleaseRollout>;
    publishing: boolean;
    onPublish(): void;
    publishButton: RefObject<HTMLButtonElement | null>;
  },
) {
  const { release: r, counts, rollout } = props;
  return (
    <tr aria-label={`${r.version} (sequence ${r.sequence})`}>
      <th scope="row">
        {r.version}
        <br />
        <span className="hint">sequence {r.sequence}</span>
        {r.notes && <p className="hint notes">{r.notes}</p>}
      </th>
      <td>
        {r.channel}
        <br />
        <span className="hint">{r.updatePolicy}</span>
      </td>
      <td>
        <span className={`status ${STATUS_CLASS[r.status]}`}>{r.status}</span>
        <RolloutBadge state={rollout} />
      </td>
      <td>
        {byteSize(r.size)}
        <br />
        <code className="hint" title={`SHA-256 ${r.checksumSha256}`}>
          sha256 {r.checksumSha256.slice(0, 12)}…
        </code>
      </td>
      <td className="dates">
        created {dateTime(r.createdAt)}
        {r.publishedAt && (
          <>
            <br />
            published {dateTime(r.publishedAt)}
          </>
        )}
        {r.yankedAt && (
          <>
            <br />
            yanked {dateTime(r.yankedAt)}
          </>
        )}
      </td>
      <td className="counts">
        {counts.on} on it
        <br />
        {counts.updating} updating
        <br />
        <span className={counts.failed > 0 ? 'status-failed' : undefined}>{counts.failed} failed</span>
      </td>
      <td>
        <ReadOnly when={props.readOnly}>{!props.publishing && <ReleaseActions {...props} />}</ReadOnly>
        <RolloutToggle state={rollout} />
      </td>
    </tr>
  );
}

function ReleaseActions({
  orgId,
  app,
  releases,
  devices,
  release: r,
  onPublish,
  publishButton,
}: Parameters<typeof ReleaseRow>[0] & { onPublish(): void; publishButton: RefObject<HTMLButtonElement | null> }) {
  /** The yank's confirmation, with what it will do (publishing has its dialog: PublishDialog). */
  const [confirm, setConfirm] = useState<Impact | null>(null);
  const yankButton = useReturnFocus(confirm !== null);
  const queryClient = useQueryClient();
  const move = useMutation({
    mutationFn: () => api<Release>('POST', apiPath`/orgs/${orgId}/apps/${app.id}/releases/${r.id}/yank`),
    onSuccess: () => setConfirm(null),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps', app.id] });
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'files'] });
    },
  });
  if (confirm) {
    const verb = r.status === 'draft' ? 'Withdraw' : 'Yank';
    return (
      <Confirm
        label={`${verb} ${r.version}`}
        onCancel={() => {
          setConfirm(null);
          move.reset();
        }}
      >
        {confirm.lines.map((line) => (
          <p key={line}>{line}</p>
        ))}
        <button type="button" className="danger" onClick={() => move.mutate()} disabled={move.isPending}>
          {verb} {r.version}
        </button>
        <button
          type="button"
          onClick={() => {
            setConfirm(null);
            move.reset();
          }}
        >
          Cancel
        </button>
        <ErrorMessage error={move.error} />
      </Confirm>
    );
  }
  return (
    <div className="actions">
      {r.status === 'draft' && (
        <button type="button" ref={publishButton} aria-label={`Publish ${r.version}`} onClick={onPublish}>
          Publish
        </button>
      )}
      {r.status !== 'yanked' && (
        <button
          type="button"
          ref={yankButton}
          aria-label={`Yank ${r.version}`}
          onClick={() => setConfirm(yankImpact(releases, devices, r, (app.releaseKeys?.length ?? 0) > 0))}
        >
          Yank
        </button>
      )}
    </div>
  );
}
