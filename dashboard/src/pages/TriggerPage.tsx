import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import type { RequestBody } from '@drover/shared/api';
import { useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ApiError, apiPath } from '../api/client';
import { chatIntegrationsQuery, PROVIDER_NAMES, TEAM_WORDS, type ChatProvider } from '../api/chat';
import { selectorMatchesQuery } from '../api/agent-pages';
import { agentQuery, agentWorkflowsQuery } from '../api/queries';
import { recentTriggerBatchesQuery } from '../api/batches';
import { occurrencesQuery, TRIGGERS_REFRESH_MS, triggerQuery, type Trigger } from '../api/triggers';
import { AGENT_DIRECTORY_REFRESH_MS } from '../api/refresh';
import { BatchCells } from '../components/BatchProgress';
import { CopyBlock } from '../components/CopyBlock';
import { shellQuote } from '../lib/shell';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { RecentJobs } from '../components/RecentJobs';
import { OccurrenceOutcome, ScheduledAt, TYPE_WORDS, utcWords, workflowWords } from '../components/trigger-words';
import { dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { RunByHand } from './RunByHand';
import { allows, useOrg } from './use-org';
import { ShowOlder } from '../components/ShowOlder';
import { parseSelectorText } from '../components/SelectorInput';
import { SelectorMatches } from '../components/SelectorMatches';
import { counted } from '@drover/shared/counted';
import { Ago } from '../components/Ago';

/** A trigger: its settings, how to call it, its schedule and occurrences; run it by hand; delete. */
export function TriggerPage() {
  const { orgId, org, loaded } = useOrg();
  const { triggerId = '' } = useParams();
  const trigger = useQuery({ ...triggerQuery(orgId, triggerId), refetchInterval: TRIGGERS_REFRESH_MS });
  // A trigger of one agent reads that agent and its workflows; one on a selector, what the
  // coordinator says the selector matches now (the agents lacking the workflow, its versions).
  const selector = trigger.data?.agentSelector ?? null;
  const oneAgentId = trigger.data?.agentSelector === null ? trigger.data.agentId : null;
  const matches = useQuery({
    ...selectorMatchesQuery(orgId, selector ?? '', trigger.data?.workflowName ?? ''),
    enabled: selector !== null,
  });
  const oneAgent = useQuery({
    ...agentQuery(orgId, oneAgentId ?? ''),
    enabled: oneAgentId !== null,
    refetchInterval: AGENT_DIRECTORY_REFRESH_MS,
    retry: false,
  });
  const oneAgentWorkflows = useQuery({ ...agentWorkflowsQuery(orgId, oneAgentId ?? ''), enabled: oneAgentId !== null });
  if ((loaded && !org) || (trigger.error instanceof ApiError && trigger.error.statusCode === 404)) {
    return <NotFoundPage />;
  }
  if (trigger.error) return <ErrorMessage error={trigger.error} />;
  if (!trigger.data) return <p className="loading">Loading…</p>;
  const t = trigger.data;
  const agent = oneAgent.data;
  const requirements = t.agentSelector === null ? null : parseSelectorText(t.agentSelector).requirements;
  return (
    <section aria-labelledby="trigger-heading">
      <div className="page-head">
        <h1 id="trigger-heading">{t.name}</h1>
        {allows(org, 'triggers.edit') && (
          <Link className="button-link" to={`/orgs/${orgId}/triggers/${t.id}/edit`}>
            Edit
          </Link>
        )}
      </div>
      <p>
        <Link to={`/orgs/${orgId}/triggers`}>All triggers</Link>
      </p>
      <ChatConnection orgId={orgId} trigger={t} />
      <Settings
        trigger={t}
        agentName={agent?.name}
        matches={
          <SelectorMatches
            matches={matches.data}
            error={matches.error}
            requirements={requirements}
            workflowName={t.workflowName ?? ''}
          />
        }
      />
      {t.type === 'webhook' && <WebhookCall trigger={t} />}
      {t.type === 'cron' && <Schedule orgId={orgId} trigger={t} />}
      {t.agentSelector !== null && t.fanout === 'all' && <RecentBatches orgId={orgId} triggerId={t.id} />}
      <RecentJobs orgId={orgId} of={{ triggerId: t.id }} allWords="All jobs of this trigger" />
      {allows(org, 'triggers.run') && (
        <RunByHand
          orgId={orgId}
          trigger={t}
          // Those of the agent a run goes to, or the versions of the workflow the selector's agents report.
          workflows={oneAgentId !== null ? (oneAgentWorkflows.data ?? []) : (matches.data?.versions ?? [])}
          mayForce={allows(org, 'runs.force')}
        />
      )}
      {allows(org, 'triggers.delete') && <DeleteTrigger orgId={orgId} trigger={t} />}
    </section>
  );
}

/**
 * What stops the trigger's chat while its workspace is not connected to the organization (never
 * connected, or disconnected since): its command is not run, its notifications are given up.
 */
function ChatConnection({ orgId, trigger: t }: { orgId: string; trigger: Trigger }) {
  const integrations = useQuery(chatIntegrationsQuery(orgId));
  if (!integrations.data) return null;
  const connected = (provider: ChatProvider, teamId: string | null) =>
    integrations.data.some((i) => i.provider === provider && i.teamId === teamId);
  const words = (provider: ChatProvider, teamId: string | null) =>
    `the ${PROVIDER_NAMES[provider]} ${TEAM_WORDS[provider]} ${teamId}`;
  const problems: string[] = [];
  if ((t.type === 'slack' || t.type === 'discord') && !connected(t.type, t.chatTeamId)) {
    problems.push(`Its chat command is not run: ${words(t.type, t.chatTeamId)} is not connected to this organization.`);
  }
  if (t.notifyProvider && t.notifyOn !== 'none' && !connected(t.notifyProvider, t.notifyTeamId)) {
    problems.push(
      `Its notifications are given up: ${words(t.notifyProvider, t.notifyTeamId)} is not connected to this organization.`,
    );
  }
  if (problems.length === 0) return null;
  return (
    <div className="panel" role="status" aria-label="Chat connection">
      {problems.map((p) => (
        <p key={p} className="warning">
          {p}
        </p>
      ))}
      <p>
        An owner connects it on the <Link to={`/orgs/${orgId}/integrations`}>Integrations page</Link>.
      </p>
    </div>
  );
}

/** A selector trigger's last batches (one per run), newest first, refreshed while the page is on screen. */
function RecentBatches({ orgId, triggerId }: { orgId: string; triggerId: string }) {
  const batches = useQuery(recentTriggerBatchesQuery(orgId, triggerId));
  return (
    <div className="panel">
      <h2 id="recent-batches-heading">Recent batches</h2>
      <ErrorMessage error={batches.error} />
      {batches.data && batches.data.length === 0 && <p>No batch yet: each run makes one, one job per agent.</p>}
      {batches.data && batches.data.length > 0 && (
        <div className="table-scroll">
          <table className="jobs batches" aria-labelledby="recent-batches-heading">
            <thead>
              <tr>
                <th scope="col">Batch</th>
                <th scope="col">Status</th>
                <th scope="col">Jobs</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {batches.data.map((batch) => (
                <tr key={batch.id}>
                  <BatchCells batch={batch} />
                  <td>
                    <Ago at={batch.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p>
        <Link to={`/orgs/${orgId}/batches?triggerId=${encodeURIComponent(triggerId)}`}>
          All batches of this trigger
        </Link>
      </p>
    </div>
  );
}

function Settings({ trigger: t, agentName, matches }: { trigger: Trigger; agentName?: string; matches: ReactNode }) {
  const rows: [string, ReactNode][] = [['Type', TYPE_WORDS[t.type]]];
  if (t.agentSelector !== null) {
    rows.push(
      [
        'Runs on',
        <>
          the agents matching <code>{t.agentSelector}</code>
        </>,
      ],
      ['Fan-out', t.fanout === 'one' ? 'one: one job, on one of them' : 'all: one job per agent (a batch)'],
      [
        'Max parallel',
        t.maxParallel === null ? 'no limit: all at once' : `${counted(t.maxParallel, 'job')} of a batch at a time`,
      ],
      ['Matching now', matches],
    );
  } else {
    rows.push(['Agent', agentName ?? t.agentId]);
  }
  rows.push(['Workflow', workflowWords(t)]);
  // A cron trigger answers no caller and never runs in debug: it has neither setting.
  if (t.type !== 'cron') {
    rows.push(['Answer', t.responseMode === 'sync' ? `sync (waits up to ${t.responseTimeoutMs / 1000} s)` : 'async']);
  }
  rows.push(['Allowed refs', t.allowedRefs ? t.allowedRefs.join(', ') : 'any ref, or none']);
  if (t.type !== 'cron') rows.push(['Debug runs', t.allowDebug ? 'allowed' : 'not allowed']);
  if (t.type === 'cron') {
    rows.push(
      ['Schedule', `${t.cronExpression} in ${t.cronTimezone}`],
      ['Enabled', t.cronEnabled ? 'yes' : 'no (paused)'],
      ['Missed occurrences', t.cronMissedPolicy === 'run_once' ? 'run the latest once' : 'skipped'],
      ['While the previous run is going', t.cronOverlapPolicy === 'queue' ? 'queued' : 'skipped'],
      ['Params of each run', t.params ? <code>{JSON.stringify(t.params)}</code> : 'none'],
      ['Ref of each run', t.ref ?? 'none'],
    );
  }
  if (t.type === 'slack' || t.type === 'discord') {
    rows.push(
      ['Chat command', `/drover ${t.chatKeyword} in channel ${t.chatChannelId} of ${t.chatTeamId}`],
      [
        'Who may run it',
        t.chatAllowedUserIds ? t.chatAllowedUserIds.join(', ') : 'anyone who can write in the channel',
      ],
    );
  }
  rows.push(
    ['Notification', t.notifyProvider ? `${t.notifyProvider} ${t.notifyChannelId} (${t.notifyOn})` : 'none'],
    ['Created', dateTime(t.createdAt)],
    ['Changed', dateTime(t.updatedAt)],
  );
  return (
    <dl className="facts" aria-label="Settings">
      {rows.map(([term, value]) => (
        <Fact key={term} term={term} value={value} />
      ))}
    </dl>
  );
}

function Fact({ term, value }: { term: string; value: ReactNode }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{value}</dd>
    </>
  );
}

/** The public run's address and a ready-to-edit curl. */
function WebhookCall({ trigger: t }: { trigger: Trigger }) {
  const url = `${window.location.origin}/v1/triggers/${t.id}/run`;
  const body: RequestBody<'runTrigger'> = {};
  if (t.scopeType === 'agent') body.workflowName = '<workflow>';
  if (t.allowedRefs) body.ref = t.allowedRefs[0];
  body.params = {};
  const curl = [
    `curl -s -X POST ${shellQuote(url)} \\`,
    `  -H 'authorization: Bearer <API token>' -H 'content-type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify(body))}`,
  ].join('\n');
  return (
    <div className="panel">
      <h2>Calling it</h2>
      <p>
        An API token whose grant names this trigger runs it with <code>POST {url}</code>; the answer is{' '}
        {t.agentSelector !== null
          ? t.responseMode === 'sync'
            ? "its batch, with every job's result, once all ended"
            : 'its batch, with the job ids, at once'
          : t.responseMode === 'sync'
            ? 'the result once the job ended'
            : 'the job id at once'}
        .
      </p>
      <CopyBlock label="Run URL" text={url} />
      <CopyBlock label="Example curl" text={curl} />
    </div>
  );
}

function Schedule({ orgId, trigger: t }: { orgId: string; trigger: Trigger }) {
  const zone = t.cronTimezone ?? 'UTC';
  const occurrences = useInfiniteQuery({ ...occurrencesQuery(orgId, t.id), refetchInterval: TRIGGERS_REFRESH_MS });
  const items = occurrences.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <div className="panel">
      <h2>Next runs</h2>
      {t.cronEnabled === false && <p>Paused: nothing runs until it is enabled again.</p>}
      {t.cronEnabled !== false && t.nextRuns.length === 0 && <p>The expression never fires again.</p>}
      {t.nextRuns.length > 0 && (
        <ol aria-label="Next runs">
          {t.nextRuns.map((r) => (
            <li key={r.at}>
              <ScheduledAt at={r.at} localTime={r.localTime} zone={zone} />
            </li>
          ))}
        </ol>
      )}
      <h2>Recent occurrences</h2>
      <ErrorMessage error={occurrences.error} />
      {occurrences.data && items.length === 0 && <p>No occurrence yet.</p>}
      {items.length > 0 && (
        <div className="table-scroll">
          <table className="occurrences">
            <thead>
              <tr>
                <th scope="col">Scheduled</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {items.map((o) => (
                <tr key={o.scheduledAt}>
                  <td>
                    {o.firstScheduledAt && <>{utcWords(o.firstScheduledAt)} to </>}
                    {utcWords(o.scheduledAt)}
                  </td>
                  <td>
                    <OccurrenceOutcome occurrence={o} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowOlder pages={occurrences} what="occurrences" />
    </div>
  );
}

function DeleteTrigger({ orgId, trigger }: { orgId: string; trigger: Trigger }) {
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation({
    mutationFn: () => api<Trigger>('DELETE', apiPath`/orgs/${orgId}/triggers/${trigger.id}`),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: triggerQuery(orgId, trigger.id).queryKey });
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'triggers'] });
    },
  });
  return (
    <div className="panel">
      <h2>Delete</h2>
      {!confirming ? (
        <button type="button" ref={opener} onClick={() => setConfirming(true)}>
          Delete trigger
        </button>
      ) : (
        <Confirm label={`Delete ${trigger.name}`} onCancel={() => setConfirming(false)}>
          <p>
            Delete {trigger.name}? It is never found again, and API tokens whose grant names it can no longer run it.
          </p>
          <button
            type="button"
            className="danger"
            onClick={() => remove.mutate(undefined, { onSuccess: () => void navigate(`/orgs/${orgId}/triggers`) })}
            disabled={remove.isPending}
          >
            Delete for good
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep it
          </button>
          <ErrorMessage error={remove.error} />
        </Confirm>
      )}
    </div>
  );
}
