import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState } from 'react';
import { emailsOf, membersQuery } from '../api/jobs';
import type { Release } from '../api/ota';
import { desiredOf } from '../api/ota-impact';
import { sessionQuery } from '../api/queries';
import {
  moveRollout,
  MOVES_FROM,
  rolloutKey,
  rolloutLive,
  rolloutQuery,
  type Rollout,
  type RolloutMove,
  type RolloutWave,
} from '../api/rollouts';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { ReadOnly } from '../components/ReadOnly';
import { planWords } from '../components/rollout-plan';
import {
  badgeWords,
  endedWords,
  EVENT_WORDS,
  pausedWords,
  ROLLOUT_STATUS_CLASS,
  whoWords,
} from '../components/rollout-words';
import { dateTime } from '../components/time';
import { counted } from '@drover/shared/counted';

/**
 * A release's staged rollout on the application's page (docs/ota.md, "Staged rollouts").
 *
 * Which rollouts are read: the release view does not say whether a release has one, so the page
 * asks (`GET .../rollout`, a 404 being "none") for the newest published release of each channel
 * only, at one request per channel: it is the only release whose rollout can still be running or
 * paused (publishing another release on the channel supersedes it). A running or paused rollout
 * is read again every 2 seconds, like the rest of the page; an ended one, or a 404 (a published
 * release never gets a rollout later), is read once. An older release's rollout, which has ended,
 * is read when asked for (**Show rollout**).
 */

export interface ReleaseRollout {
  release: Release;
  /** undefined: not read (yet); null: the release has none. */
  rollout: Rollout | null | undefined;
  error: unknown;
  /** Whether its panel is open: a live rollout's is, until hidden (after it ended, too). */
  shown: boolean;
  /** Whether the release can have a rollout worth asking about (published or yanked). */
  askable: boolean;
  /** Whether the page reads its rollout without being asked (the newest published release of its channel). */
  newest: boolean;
  toggle(): void;
}

export function useReleaseRollout(
  orgId: string,
  appId: string,
  release: Release,
  releases: readonly Release[],
): ReleaseRollout {
  const askable = release.status !== 'draft';
  const newest = release.status === 'published' && desiredOf(releases, release.channel)?.id === release.id;
  const [open, setOpen] = useState<boolean | null>(null);
  const query = useQuery({
    ...rolloutQuery(orgId, appId, release.id),
    // Once live, read until it ends, even when another publish made it an older release.
    enabled: (q) => askable && (newest || open === true || rolloutLive(q.state.data)),
  });
  // A panel opened because the rollout was live stays open when it ends (an abort, say), until hidden.
  const [seenLive, setSeenLive] = useState(false);
  if (!seenLive && rolloutLive(query.data)) setSeenLive(true);
  const shown = open ?? seenLive;
  return { release, rollout: query.data, error: query.error, shown, askable, newest, toggle: () => setOpen(!shown) };
}

/** Under the release's status: `rollout running, wave 1 of 3`. */
export function RolloutBadge({ state }: { state: ReleaseRollout }) {
  if (!state.rollout) return null;
  return (
    <>
      <br />
      <span className={`status rollout-badge ${ROLLOUT_STATUS_CLASS[state.rollout.status]}`}>
        {badgeWords(state.rollout)}
      </span>
    </>
  );
}

/** **Show rollout** / **Hide rollout**, among the release's actions. */
export function RolloutToggle({ state }: { state: ReleaseRollout }) {
  // Offered for a rollout the page read, and for an older release's, which it reads when asked.
  const offered = state.rollout ? true : state.rollout === undefined ? !state.newest : state.shown;
  if (!state.askable || !offered) return null;
  const words = state.shown ? 'Hide rollout' : 'Show rollout';
  return (
    <button type="button" aria-label={`${words} of ${state.release.version}`} onClick={state.toggle}>
      {words}
    </button>
  );
}

/** The row under the release's that holds its rollout panel, when open. */
export function RolloutRow(props: { orgId: string; state: ReleaseRollout; columns: number; readOnly: boolean }) {
  const { orgId, state, columns } = props;
  if (!state.shown) return null;
  const { release: r, rollout } = state;
  return (
    <tr className="release-detail">
      <td colSpan={columns}>
        {rollout ? (
          <ReadOnly when={props.readOnly}>
            <RolloutPanel orgId={orgId} release={r} rollout={rollout} />
          </ReadOnly>
        ) : (
          <section aria-label={`Rollout of ${r.version}`}>
            <ErrorMessage error={state.error} />
            {rollout === null && <p>{r.version} was published at once: it has no rollout.</p>}
            {rollout === undefined && !state.error && <p className="loading">Loading…</p>}
          </section>
        )}
      </td>
    </tr>
  );
}

export function RolloutPanel({ orgId, release: r, rollout }: { orgId: string; release: Release; rollout: Rollout }) {
  const session = useQuery(sessionQuery);
  const members = useQuery(membersQuery(orgId));
  const emails = emailsOf(members.data);
  const who = (by: string) => whoWords(by, session.data?.user.id, emails);
  const live = rolloutLive(rollout);
  const headingId = `rollout-${r.id}-heading`;
  return (
    <section aria-labelledby={headingId} className="rollout-panel">
      <h3 id={headingId}>
        Rollout of {r.version}{' '}
        <span className={`status ${ROLLOUT_STATUS_CLASS[rollout.status]}`}>{rollout.status}</span>
      </h3>
      <p className="rollout-state" role="status">
        {stateWords(rollout, who)}
      </p>
      <p className="hint">
        {rollout.deviceCount === 1 ? '1 device' : `${rollout.deviceCount} devices`} on channel {rollout.channel} when it
        was published, in {planWords({ ...rollout, waves: rollout.waves.map((w) => w.percent) })}.
        {live && ' The page reads the rollout again every 2 seconds.'}
      </p>
      <RolloutControls orgId={orgId} release={r} rollout={rollout} />
      <ol className="rollout-waves" aria-label={`Waves of the rollout of ${r.version}`}>
        {rollout.waves.map((w, i) => (
          <WaveCard key={i} rollout={rollout} wave={w} index={i} />
        ))}
      </ol>
      <h4 id={`${headingId}-history`}>History</h4>
      <ol className="rollout-history" aria-labelledby={`${headingId}-history`}>
        {rollout.history.map((h, i) => (
          <li key={i}>
            <time dateTime={h.at}>{dateTime(h.at)}</time> <strong>{who(h.by)}</strong> {EVENT_WORDS[h.event]}
            {h.detail && <span className="hint">: {h.detail}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The rollout's state in a sentence: where it is, what it waits for, or how it ended. */
function stateWords(rollout: Rollout, who: (by: string) => string) {
  const n = rollout.currentWave + 1;
  const of = `wave ${n} of ${rollout.waves.length}`;
  switch (rollout.status) {
    case 'running': {
      if (rollout.soakEndsAt) {
        return (
          <>
            Running, {of}: every update of the wave ended; it soaks, next wave at{' '}
            <time dateTime={rollout.soakEndsAt}>{dateTime(rollout.soakEndsAt)}</time>.
          </>
        );
      }
      const pending = rollout.waves[rollout.currentWave]?.pending ?? 0;
      return `Running, ${of}: waiting for ${pending === 1 ? '1 update' : `${pending} updates`} of the wave to end.`;
    }
    case 'paused':
      return pausedWords(rollout, who);
    default:
      return (
        <>
          {endedWords(rollout)}
          {rollout.endedAt && (
            <>
              {' '}
              Ended <time dateTime={rollout.endedAt}>{dateTime(rollout.endedAt)}</time>.
            </>
          )}
        </>
      );
  }
}

function WaveCard({ rollout, wave: w, index: i }: { rollout: Rollout; wave: RolloutWave; index: number }) {
  const current = rolloutLive(rollout) && i === rollout.currentWave;
  const added = w.succeeded + w.failed + w.pending;
  const total = Math.max(added, 1);
  const parts = [
    { key: 'succeeded', n: w.succeeded },
    { key: 'failed', n: w.failed },
    { key: 'pending', n: w.pending },
  ] as const;
  let x = 0;
  return (
    <li className={current ? 'rollout-wave current' : 'rollout-wave'} aria-current={current ? 'step' : undefined}>
      <p className="wave-title">
        <strong>
          Wave {i + 1}: {w.percent} %
        </strong>
        {current && <span className="wave-current"> current wave</span>}
      </p>
      <p className="hint">
        {w.devices === 1 ? '1 device' : `${w.devices} devices`} in all; {added === 0 ? 'no new device' : `${added} new`}
      </p>
      {/* Lengths as SVG attributes: the page's policy allows no inline style. */}
      <svg className="progress-bar" viewBox={`0 0 ${total} 1`} preserveAspectRatio="none" aria-hidden="true">
        <rect className="progress-track" x={0} y={0} width={total} height={1} />
        {parts.map((p) => {
          const rect = p.n > 0 && (
            <rect key={p.key} className={`progress-${p.key}`} x={x} y={0} width={p.n} height={1} />
          );
          x += p.n;
          return rect;
        })}
      </svg>
      <ul className="progress-legend" aria-label={`Wave ${i + 1}'s new devices`}>
        {parts.map((p) => (
          <li key={p.key}>
            <span className={`swatch progress-${p.key}`} aria-hidden="true" />
            {p.n} {p.key}
          </li>
        ))}
      </ul>
      <p className="hint wave-times">
        {w.startedAt ? (
          <>
            started <time dateTime={w.startedAt}>{dateTime(w.startedAt)}</time>
          </>
        ) : (
          'not started'
        )}
        {w.endedAt && (
          <>
            <br />
            ended <time dateTime={w.endedAt}>{dateTime(w.endedAt)}</time>
          </>
        )}
      </p>
    </li>
  );
}

/** Pause, Resume, Advance and Abort, each shown when it fits the status; Advance and Abort ask first. */
function RolloutControls({ orgId, release: r, rollout }: { orgId: string; release: Release; rollout: Rollout }) {
  const [confirm, setConfirm] = useState<'advance' | 'abort' | null>(null);
  const advanceButton = useReturnFocus(confirm === 'advance');
  const abortButton = useReturnFocus(confirm === 'abort');
  const queryClient = useQueryClient();
  const key = rolloutKey(orgId, rollout.applicationId, r.id);
  const move = useMutation({
    // An advance says which wave the page shows: if the rollout is at another now (its soak ended, another
    // member advanced it, an earlier click went through), the API refuses it (409) instead of starting a
    // wave more than the one the confirmation named. Pause and abort stop it wherever it is now.
    mutationFn: (m: RolloutMove) =>
      moveRollout(orgId, rollout.applicationId, r.id, m, m === 'advance' ? rollout.currentWave : undefined),
    onSuccess: (moved) => queryClient.setQueryData(key, moved),
    // A refusal (409: the rollout moved meanwhile, its message shown) leaves the page to show it as it is now.
    onError: () => void queryClient.invalidateQueries({ queryKey: key }),
    onSettled: () => {
      setConfirm(null);
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps', rollout.applicationId, 'devices'] });
    },
  });
  const fits = (m: RolloutMove) => MOVES_FROM[m].includes(rollout.status);
  if (!rolloutLive(rollout) && !move.error) return null;
  const button = (m: RolloutMove, words: string, onClick: () => void, className?: string) =>
    fits(m) && (
      <button
        type="button"
        className={className}
        ref={m === 'advance' ? advanceButton : m === 'abort' ? abortButton : undefined}
        aria-label={`${words} the rollout of ${r.version}`}
        onClick={onClick}
        disabled={move.isPending}
      >
        {words}
      </button>
    );
  return (
    <div className="rollout-controls">
      {confirm ? (
        <Confirm
          label={`${confirm === 'advance' ? 'Advance' : 'Abort'} the rollout of ${r.version}`}
          onCancel={() => setConfirm(null)}
          className=""
        >
          <p>{confirm === 'advance' ? advanceWords(rollout, r) : abortWords(rollout, r)}</p>
          <button
            type="button"
            className={confirm === 'abort' ? 'danger' : undefined}
            onClick={() => move.mutate(confirm)}
            disabled={move.isPending}
          >
            {confirm === 'abort'
              ? 'Abort the rollout'
              : rollout.currentWave >= rollout.waves.length - 1
                ? 'Complete the rollout now'
                : `Start wave ${rollout.currentWave + 2} now`}
          </button>
          <button type="button" onClick={() => setConfirm(null)}>
            Cancel
          </button>
        </Confirm>
      ) : (
        <div className="actions">
          {button('pause', 'Pause', () => move.mutate('pause'))}
          {button('resume', 'Resume', () => move.mutate('resume'))}
          {button('advance', 'Advance', () => {
            move.reset();
            setConfirm('advance');
          })}
          {button(
            'abort',
            'Abort',
            () => {
              move.reset();
              setConfirm('abort');
            },
            'danger',
          )}
        </div>
      )}
      <ErrorMessage error={move.error} />
    </div>
  );
}

function advanceWords(rollout: Rollout, r: Release): string {
  const i = rollout.currentWave;
  const wave = rollout.waves[i];
  const pending = wave?.pending ?? 0;
  const waiting =
    pending > 0
      ? `without waiting for the ${pending === 1 ? 'update' : `${pending} updates`} of wave ${i + 1} still pending`
      : rollout.soakEndsAt
        ? `without waiting for the end of wave ${i + 1}'s soak`
        : 'now';
  const next = rollout.waves[i + 1];
  if (!next || !wave) {
    return `The rollout completes ${waiting}: every device of channel ${rollout.channel} gets ${r.version}, those bound later too.`;
  }
  const added = next.devices - wave.devices;
  return `Wave ${i + 2} (${next.percent} %) starts ${waiting}: ${added === 0 ? 'it adds no device' : `${counted(added, 'device')} more ${added === 1 ? 'is' : 'are'} told to update to ${r.version}`}.`;
}

function abortWords(rollout: Rollout, r: Release): string {
  const given = rollout.waves[rollout.currentWave]?.devices ?? 0;
  const rest = rollout.deviceCount - given;
  return (
    `Aborting the rollout of ${r.version}: ${counted(rest, 'device')} not yet given it ${rest === 1 ? 'keeps' : 'keep'} the previous release, ` +
    `and so do devices bound later; the ${counted(given, 'device')} of the waves so far ${given === 1 ? 'keeps' : 'keep'} ${r.version}. It cannot be undone.`
  );
}
