import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ApiError, apiPath } from '../api/client';
import { chatIntegrationsQuery, PROVIDER_NAMES, TEAM_WORDS, type ChatProvider } from '../api/chat';
import { selectorMatchesQuery } from '../api/agent-pages';
import { agentQuery, agentWorkflowsQuery } from '../api/queries';
import { decimal } from '../components/decimal';
import { AgentPicker } from '../components/AgentPicker';
import { SelectorMatches } from '../components/SelectorMatches';
import { parseSelectorText, SelectorInput } from '../components/SelectorInput';
import { triggerQuery, type Trigger, type TriggerFields, type TriggerType } from '../api/triggers';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError, unreadableNumbers, type FieldErrors } from '../components/FieldErrors';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';

/** The form's state: every input as typed. */
interface Draft {
  name: string;
  type: TriggerType;
  /** Where it runs: one agent (`agentId`), or the agents a label selector matches. */
  target: 'agent' | 'selector';
  agentId: string;
  agentSelector: string;
  /** `all`: a batch, one job per agent; `one`: a pool, one job on one of them. */
  fanout: 'one' | 'all';
  maxParallel: string;
  scopeType: 'workflow' | 'agent';
  workflowName: string;
  responseMode: 'async' | 'sync';
  responseTimeoutMs: string;
  allowedRefs: string;
  allowDebug: boolean;
  notifyProvider: '' | 'slack' | 'discord';
  notifyTeamId: string;
  notifyChannelId: string;
  notifyOn: TriggerFields['notifyOn'];
  cronExpression: string;
  cronTimezone: string;
  cronEnabled: boolean;
  cronMissedPolicy: 'skip' | 'run_once';
  cronOverlapPolicy: 'skip' | 'queue';
  params: string;
  ref: string;
  chatTeamId: string;
  chatChannelId: string;
  chatKeyword: string;
  chatAllowedUserIds: string;
}

/** The API's fields the form shows; those of where it runs depend on the choice (TARGET_FIELDS). */
const FIELDS = [
  'name',
  'type',
  'scopeType',
  'workflowName',
  'responseMode',
  'responseTimeoutMs',
  'allowedRefs',
  'allowDebug',
  'notifyProvider',
  'notifyTeamId',
  'notifyChannelId',
  'notifyOn',
  'cronExpression',
  'cronTimezone',
  'cronEnabled',
  'cronMissedPolicy',
  'cronOverlapPolicy',
  'params',
  'ref',
  'chatTeamId',
  'chatChannelId',
  'chatKeyword',
  'chatAllowedUserIds',
] as const;

const TARGET_FIELDS: Record<Draft['target'], readonly string[]> = {
  agent: ['agentId'],
  selector: ['agentSelector', 'fanout', 'maxParallel'],
};

const EMPTY: Draft = {
  name: '',
  type: 'webhook',
  target: 'agent',
  agentId: '',
  agentSelector: '',
  fanout: 'all',
  maxParallel: '',
  scopeType: 'workflow',
  workflowName: '',
  responseMode: 'async',
  responseTimeoutMs: '30000',
  allowedRefs: '',
  allowDebug: false,
  notifyProvider: '',
  notifyTeamId: '',
  notifyChannelId: '',
  notifyOn: 'always',
  cronExpression: '',
  cronTimezone: 'UTC',
  cronEnabled: true,
  cronMissedPolicy: 'skip',
  cronOverlapPolicy: 'skip',
  params: '',
  ref: '',
  chatTeamId: '',
  chatChannelId: '',
  chatKeyword: '',
  chatAllowedUserIds: '',
};

/**
 * The fields `mine` changed from `base` (the trigger the form opened on), made onto `theirs` (the
 * trigger as another change left it): what the form becomes when that change refused its save.
 */
export function rebaseDraft(mine: Draft, base: Draft, theirs: Draft): Draft {
  const merged: Draft = { ...theirs };
  for (const key of Object.keys(mine) as (keyof Draft)[]) {
    if (mine[key] !== base[key]) (merged as unknown as Record<string, unknown>)[key] = mine[key];
  }
  return merged;
}

function draftOf(t: Trigger): Draft {
  return {
    name: t.name,
    type: t.type,
    target: t.agentSelector !== null ? 'selector' : 'agent',
    agentId: t.agentId ?? '',
    agentSelector: t.agentSelector ?? '',
    fanout: t.fanout ?? 'all',
    maxParallel: t.maxParallel === null ? '' : String(t.maxParallel),
    scopeType: t.scopeType,
    workflowName: t.workflowName ?? '',
    responseMode: t.responseMode,
    responseTimeoutMs: String(t.responseTimeoutMs),
    allowedRefs: (t.allowedRefs ?? []).join('\n'),
    allowDebug: t.allowDebug,
    notifyProvider: t.notifyProvider ?? '',
    notifyTeamId: t.notifyTeamId ?? '',
    notifyChannelId: t.notifyChannelId ?? '',
    notifyOn: t.notifyProvider ? t.notifyOn : 'always',
    cronExpression: t.cronExpression ?? '',
    cronTimezone: t.cronTimezone ?? 'UTC',
    cronEnabled: t.cronEnabled ?? true,
    cronMissedPolicy: t.cronMissedPolicy ?? 'skip',
    cronOverlapPolicy: t.cronOverlapPolicy ?? 'skip',
    params: t.params ? JSON.stringify(t.params, null, 2) : '',
    ref: t.ref ?? '',
    chatTeamId: t.chatTeamId ?? '',
    chatChannelId: t.chatChannelId ?? '',
    chatKeyword: t.chatKeyword ?? '',
    chatAllowedUserIds: (t.chatAllowedUserIds ?? []).join('\n'),
  };
}

const orNull = (s: string): string | null => (s.trim() === '' ? null : s.trim());

/**
 * The request body for the draft: the fields of its kind only (the API refuses the others).
 * Throws an ApiError at `body.params` when the params are not a JSON object.
 */
export function bodyOf(d: Draft): TriggerFields {
  const refs = d.allowedRefs
    .split('\n')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  const body: TriggerFields = {
    name: d.name,
    type: d.type,
    // The other way is sent as null: a trigger edited from one to the other leaves it.
    ...(d.target === 'agent'
      ? // No agent chosen is none (the API says one is required), not an id that is empty.
        { agentId: d.agentId || null, agentSelector: null, fanout: null, maxParallel: null }
      : {
          agentId: null,
          agentSelector: d.agentSelector,
          fanout: d.fanout,
          // A pool runs each call's one job: it has no max parallel.
          maxParallel: d.fanout === 'all' ? parseMaxParallel(d.maxParallel) : null,
        }),
    scopeType: d.scopeType,
    workflowName: d.scopeType === 'workflow' ? d.workflowName.trim() : null,
    allowedRefs: refs.length > 0 ? refs : null,
    notifyProvider: d.notifyProvider || null,
    // Ids are pasted from Slack or Discord, often with a space around them (the hints trim too).
    notifyTeamId: d.notifyProvider ? d.notifyTeamId.trim() : null,
    notifyChannelId: d.notifyProvider ? d.notifyChannelId.trim() : null,
    notifyOn: d.notifyProvider ? d.notifyOn : 'none',
  };
  // A cron trigger answers no caller and never runs in debug: the form has no such inputs for it.
  if (d.type !== 'cron') {
    body.responseMode = d.responseMode;
    body.allowDebug = d.allowDebug;
    // The wait matters to sync triggers only, and its input is shown only for them.
    if (d.responseMode === 'sync') body.responseTimeoutMs = Number(d.responseTimeoutMs);
  }
  if (d.type === 'cron') {
    body.cronExpression = d.cronExpression;
    body.cronTimezone = d.cronTimezone.trim() || 'UTC';
    body.cronEnabled = d.cronEnabled;
    body.cronMissedPolicy = d.cronMissedPolicy;
    body.cronOverlapPolicy = d.cronOverlapPolicy;
    body.params = parseParams(d.params);
    body.ref = orNull(d.ref);
  }
  if (d.type === 'slack' || d.type === 'discord') {
    const allowed = d.chatAllowedUserIds.split(/[\s,]+/).filter((id) => id !== '');
    body.chatTeamId = d.chatTeamId.trim();
    body.chatChannelId = d.chatChannelId.trim();
    body.chatKeyword = d.chatKeyword.trim();
    body.chatAllowedUserIds = allowed.length > 0 ? allowed : null;
  }
  return body;
}

/**
 * Max parallel as typed: empty is none (all at once), a number is sent as is (the API says what it
 * takes); anything else throws an ApiError at `body.maxParallel`, rather than being sent as none.
 */
function parseMaxParallel(text: string): number | null {
  const typed = text.trim();
  if (typed === '') return null;
  const value = decimal(typed);
  if (Number.isFinite(value)) return value;
  const message = `must be a number, such as 5, or empty for all at once; got "${typed}"`;
  throw new ApiError(422, 'validation_failed', `maxParallel ${message}`, [{ path: 'body.maxParallel', message }]);
}

function parseParams(text: string): Record<string, unknown> | null {
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const message = 'must be a JSON object such as {"who": "night shift"}';
    throw new ApiError(422, 'validation_failed', `params ${message}`, [{ path: 'body.params', message }]);
  }
  return value as Record<string, unknown>;
}

/** Create a trigger (`/orgs/:orgId/triggers/new`) or change one (`.../:triggerId/edit`). */
export function TriggerFormPage() {
  const { orgId, org, loaded } = useOrg();
  const { triggerId } = useParams();
  const existing = useQuery({ ...triggerQuery(orgId, triggerId ?? ''), enabled: triggerId !== undefined });
  if (loaded && !org) return <NotFoundPage />;
  // The form's address typed or bookmarked by a role that cannot save it: why, instead of a form.
  if (org && !allows(org, 'triggers.edit')) {
    return (
      <section aria-labelledby="trigger-form-heading">
        <h1 id="trigger-form-heading">{triggerId === undefined ? 'New trigger' : 'Edit trigger'}</h1>
        <p>
          A {org.role} cannot create or change triggers: an owner, an operator or a member can.{' '}
          <Link to={triggerId === undefined ? `/orgs/${orgId}/triggers` : `/orgs/${orgId}/triggers/${triggerId}`}>
            {triggerId === undefined ? 'All triggers' : 'The trigger'}
          </Link>
        </p>
      </section>
    );
  }
  if (triggerId === undefined) return <TriggerForm orgId={orgId} initial={EMPTY} />;
  if (existing.error instanceof ApiError && existing.error.statusCode === 404) return <NotFoundPage />;
  if (existing.error) return <ErrorMessage error={existing.error} />;
  if (!existing.data) return <p className="loading">Loading…</p>;
  return <TriggerForm orgId={orgId} trigger={existing.data} initial={draftOf(existing.data)} />;
}

function TriggerForm({ orgId, trigger, initial }: { orgId: string; trigger?: Trigger; initial: Draft }) {
  const [draft, setDraft] = useState<Draft>(initial);
  // The trigger as the form's fields were made from it: a save changes that version only
  // (`If-Match`), never one that another tab or person saved meanwhile (a 412, below).
  const [base, setBase] = useState(trigger);
  const onSelector = draft.target === 'selector';
  // One agent: that agent's workflows, and its name while it is out of the picker's agents. A
  // selector: what the coordinator says it matches as it is typed (SelectorMatches), once it parses.
  const parsedSelector = parseSelectorText(draft.agentSelector);
  const selecting = onSelector && (parsedSelector.requirements?.length ?? 0) > 0;
  const matches = useQuery({
    ...selectorMatchesQuery(orgId, draft.agentSelector.trim(), draft.workflowName.trim()),
    enabled: selecting,
  });
  const agentWorkflows = useQuery({
    ...agentWorkflowsQuery(orgId, draft.agentId),
    enabled: !onSelector && !!draft.agentId,
  });
  const chosen = useQuery({
    ...agentQuery(orgId, draft.agentId),
    enabled: !onSelector && !!draft.agentId,
    refetchInterval: false,
  });
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const save = useMutation({
    mutationFn: ({ sent, unreadable }: { sent: Draft; unreadable: ApiError | null }) => {
      // A sync wait the browser cannot read would be sent as 0, and refused as out of range.
      if (unreadable) throw unreadable;
      const body = bodyOf(sent);
      return base
        ? api<Trigger>('PATCH', apiPath`/orgs/${orgId}/triggers/${base.id}`, {
            body,
            headers: { 'if-match': `"${base.updatedAt}"` },
          })
        : api<Trigger>('POST', apiPath`/orgs/${orgId}/triggers`, { body });
    },
    // Here, not at the call: a save that ends after the operator went to another page leaves them there.
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'triggers'] }),
  });
  const errors = fieldErrors(save.error, [...FIELDS, ...TARGET_FIELDS[draft.target]]);
  const changedElsewhere = save.error instanceof ApiError && save.error.statusCode === 412;
  // The trigger as it is now, with the fields this form changed made onto it, and its version.
  const [rebased, setRebased] = useState(false);
  const loadAgain = useMutation({
    mutationFn: () => queryClient.fetchQuery({ ...triggerQuery(orgId, base!.id), staleTime: 0 }),
    onSuccess: (latest) => {
      setDraft(rebaseDraft(draft, draftOf(base!), draftOf(latest)));
      setBase(latest);
      setRebased(true);
      save.reset();
    },
  });
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  // A trigger on a selector runs one workflow, named here, on each agent: choosing it sets that scope.
  const setTarget = (target: Draft['target']) =>
    setDraft((d) => ({ ...d, target, scopeType: target === 'selector' ? 'workflow' : d.scopeType }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setRebased(false);
    save.mutate(
      { sent: draft, unreadable: unreadableNumbers(event.currentTarget) },
      // Called only while the form is still shown (TanStack Query drops a call's callbacks at unmount).
      { onSuccess: (saved) => void navigate(`/orgs/${orgId}/triggers/${saved.id}`) },
    );
  };
  // The workflows to offer: the agent's, or those of the agents the selector matches now.
  const offered = onSelector
    ? selecting
      ? (matches.data?.workflowNames ?? [])
      : []
    : [...new Set((draft.agentId ? (agentWorkflows.data ?? []) : []).map((w) => w.name))].sort();
  const title = trigger ? `Edit ${trigger.name}` : 'New trigger';
  const text = (field: keyof Draft & string, label: string, hint?: ReactNode, extra: Record<string, unknown> = {}) => (
    <Field errors={errors} field={field} label={label} hint={hint}>
      <input
        {...errors.props(field)}
        value={draft[field] as string}
        onChange={(e) => set(field, e.target.value as never)}
        {...extra}
      />
    </Field>
  );
  return (
    <section aria-labelledby="trigger-form-heading">
      <h1 id="trigger-form-heading">{title}</h1>
      <form onSubmit={submit} noValidate>
        {changedElsewhere ? (
          <div role="alert" className="error">
            <p>Nothing was saved: this trigger was changed elsewhere since this form opened.</p>
            <button type="button" onClick={() => loadAgain.mutate()} disabled={loadAgain.isPending}>
              Make my changes onto it as it is now
            </button>
            {loadAgain.error ? <ErrorMessage error={loadAgain.error} /> : null}
          </div>
        ) : (
          <FormError error={save.error} errors={errors} />
        )}
        {rebased && !changedElsewhere && (
          <p role="status">
            The form shows the trigger as it is now, with the fields you changed made onto it: check them, then save.
          </p>
        )}
        <div className="form-grid">
          {text('name', 'Name')}
          <Field errors={errors} field="type" label="Type" hint={TYPE_HINTS[draft.type]}>
            <select
              {...errors.props('type')}
              value={draft.type}
              onChange={(e) => set('type', e.target.value as TriggerType)}
            >
              <option value="webhook">webhook</option>
              <option value="cron">cron</option>
              <option value="slack">Slack</option>
              <option value="discord">Discord</option>
            </select>
          </Field>
        </div>

        <fieldset>
          <legend>Runs on</legend>
          <div className="choices">
            <label className="check">
              <input
                type="radio"
                name="target"
                value="agent"
                checked={!onSelector}
                onChange={() => setTarget('agent')}
              />
              one agent
            </label>
            <label className="check">
              <input
                type="radio"
                name="target"
                value="selector"
                checked={onSelector}
                onChange={() => setTarget('selector')}
              />
              the agents matching a label selector
            </label>
          </div>
          {!onSelector && (
            <div className="form-grid">
              <Field errors={errors} field="agentId" label="Agent">
                <AgentPicker
                  orgId={orgId}
                  value={draft.agentId}
                  valueName={chosen.data?.name}
                  onChange={(id) => set('agentId', id)}
                  none="Choose an agent…"
                  active
                  select={errors.props('agentId')}
                />
              </Field>
            </div>
          )}
          {onSelector && (
            <>
              <SelectorInput
                id={errors.props('agentSelector').id}
                label="Label selector"
                value={draft.agentSelector}
                onChange={(value) => set('agentSelector', value)}
                parsed={parsedSelector}
                // What the coordinator said of the selector sent, until it is changed.
                refusals={save.variables?.sent.agentSelector === draft.agentSelector ? errors.of('agentSelector') : []}
              >
                <SelectorMatches
                  matches={selecting ? matches.data : undefined}
                  error={matches.error}
                  requirements={parsedSelector.requirements}
                  workflowName={draft.workflowName}
                />
              </SelectorInput>
              <div className="form-grid wide-fields">
                <Field
                  errors={errors}
                  field="fanout"
                  label="Fan-out"
                  hint="all: each run makes a batch, one job on every agent the selector matches then; one: each run's job goes to one of them (a pool), the least busy with room, or the first to have room"
                >
                  <select
                    {...errors.props('fanout')}
                    value={draft.fanout}
                    onChange={(e) => set('fanout', e.target.value as Draft['fanout'])}
                  >
                    <option value="all">all: one job per agent (a batch)</option>
                    <option value="one">one: one job on one of them (a pool)</option>
                  </select>
                </Field>
                {draft.fanout === 'all' &&
                  text(
                    'maxParallel',
                    'Max parallel (optional)',
                    "at most this many of a batch's jobs handed out at a time, the next as one ends; empty: all at once",
                    // Text, not a number input: what is typed reaches the form, which says what is wrong with it.
                    { inputMode: 'numeric', placeholder: 'all at once' },
                  )}
              </div>
            </>
          )}
        </fieldset>

        <div className="form-grid">
          <Field
            errors={errors}
            field="scopeType"
            label="Runs"
            hint={
              onSelector
                ? 'a trigger on a selector runs one workflow, named below, on each agent it matches'
                : undefined
            }
          >
            <select
              {...errors.props('scopeType')}
              value={draft.scopeType}
              onChange={(e) => set('scopeType', e.target.value as Draft['scopeType'])}
            >
              <option value="workflow">one workflow</option>
              <option value="agent" disabled={onSelector}>
                any workflow of the agent (each call names it){onSelector ? ': not on a selector' : ''}
              </option>
            </select>
          </Field>
          {draft.scopeType === 'workflow' &&
            text(
              'workflowName',
              'Workflow',
              onSelector ? 'an agent that does not report it gets a rejected job' : 'the agent need not report it yet',
              {
                list: 'trigger-workflows',
              },
            )}
          <datalist id="trigger-workflows">
            {offered.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
          {draft.type !== 'cron' && (
            <Field errors={errors} field="responseMode" label="Answer">
              <select
                {...errors.props('responseMode')}
                value={draft.responseMode}
                onChange={(e) => set('responseMode', e.target.value as Draft['responseMode'])}
              >
                <option value="async">async: the {onSelector ? 'batch' : 'job'} id at once</option>
                <option value="sync">
                  sync: {onSelector ? 'the results once all jobs ended' : 'the result once the job ended'}
                </option>
              </select>
            </Field>
          )}
          {draft.type !== 'cron' &&
            draft.responseMode === 'sync' &&
            text('responseTimeoutMs', 'Sync wait (ms)', '1,000 to 600,000', {
              type: 'number',
              min: 1000,
              max: 600000,
              'data-example': '30000',
            })}
          <Field errors={errors} field="allowedRefs" label="Allowed refs" hint="one per line; empty: any ref, or none">
            <textarea
              {...errors.props('allowedRefs')}
              rows={3}
              value={draft.allowedRefs}
              onChange={(e) => set('allowedRefs', e.target.value)}
            />
          </Field>
          {draft.type !== 'cron' && (
            <Field errors={errors} field="allowDebug" label="" check>
              <label className="check">
                <input
                  {...errors.props('allowDebug')}
                  type="checkbox"
                  checked={draft.allowDebug}
                  onChange={(e) => set('allowDebug', e.target.checked)}
                />
                Calls may ask for a debug run
              </label>
            </Field>
          )}
        </div>

        {draft.type === 'cron' && (
          <fieldset>
            <legend>Schedule</legend>
            <div className="form-grid">
              {text(
                'cronExpression',
                'Cron expression',
                'five fields: minute hour day-of-month month day-of-week (30 2 * * MON-FRI)',
              )}
              {text('cronTimezone', 'Time zone', 'an IANA zone name such as Europe/Paris')}
              <Field errors={errors} field="cronMissedPolicy" label="Missed occurrences">
                <select
                  {...errors.props('cronMissedPolicy')}
                  value={draft.cronMissedPolicy}
                  onChange={(e) => set('cronMissedPolicy', e.target.value as Draft['cronMissedPolicy'])}
                >
                  <option value="skip">skip them</option>
                  <option value="run_once">run the latest once (within 1 hour)</option>
                </select>
              </Field>
              <Field errors={errors} field="cronOverlapPolicy" label="While the previous run is going">
                <select
                  {...errors.props('cronOverlapPolicy')}
                  value={draft.cronOverlapPolicy}
                  onChange={(e) => set('cronOverlapPolicy', e.target.value as Draft['cronOverlapPolicy'])}
                >
                  <option value="skip">skip the occurrence</option>
                  <option value="queue">queue it</option>
                </select>
              </Field>
              <Field errors={errors} field="cronEnabled" label="" check>
                <label className="check">
                  <input
                    {...errors.props('cronEnabled')}
                    type="checkbox"
                    checked={draft.cronEnabled}
                    onChange={(e) => set('cronEnabled', e.target.checked)}
                  />
                  Enabled
                </label>
              </Field>
              {text('ref', 'Ref of each run', 'required, and one of the allowed refs, when they are set')}
              <Field
                errors={errors}
                field="params"
                label="Params of each run (JSON)"
                hint='an object, such as {"who": "night shift"}'
                wide
              >
                <textarea
                  {...errors.props('params')}
                  rows={4}
                  value={draft.params}
                  onChange={(e) => set('params', e.target.value)}
                />
              </Field>
            </div>
          </fieldset>
        )}

        {(draft.type === 'slack' || draft.type === 'discord') && (
          <fieldset>
            <legend>Chat command</legend>
            <div className="form-grid">
              {text(
                'chatTeamId',
                draft.type === 'slack' ? 'Workspace id' : 'Server id',
                <WorkspaceHint orgId={orgId} provider={draft.type} teamId={draft.chatTeamId} />,
                { list: `workspaces-${draft.type}` },
              )}
              {text('chatChannelId', 'Channel id', draft.type === 'slack' ? 'C…, from the channel details' : undefined)}
              {text('chatKeyword', 'Keyword', '1 to 64 characters, no spaces, no = or quotes')}
              <Field
                errors={errors}
                field="chatAllowedUserIds"
                label="Who may run it"
                hint="user ids, one per line; empty: anyone who can write in the channel"
              >
                <textarea
                  {...errors.props('chatAllowedUserIds')}
                  rows={3}
                  value={draft.chatAllowedUserIds}
                  onChange={(e) => set('chatAllowedUserIds', e.target.value)}
                />
              </Field>
            </div>
            <p className="hint">
              People run it with <code>/drover {draft.chatKeyword || '<keyword>'} key=value …</code> or by mentioning
              the app; the outcome is told to them in the channel.
            </p>
          </fieldset>
        )}
        <WorkspaceOptions orgId={orgId} />

        <fieldset>
          <legend>Notification</legend>
          <div className="form-grid">
            <Field errors={errors} field="notifyProvider" label="Post the outcome to">
              <select
                {...errors.props('notifyProvider')}
                value={draft.notifyProvider}
                onChange={(e) => set('notifyProvider', e.target.value as Draft['notifyProvider'])}
              >
                <option value="">nowhere</option>
                <option value="slack">Slack</option>
                <option value="discord">Discord</option>
              </select>
            </Field>
            {draft.notifyProvider && (
              <>
                {text(
                  'notifyTeamId',
                  draft.notifyProvider === 'slack' ? 'Notify workspace id' : 'Notify server id',
                  <WorkspaceHint orgId={orgId} provider={draft.notifyProvider} teamId={draft.notifyTeamId} />,
                  { list: `workspaces-${draft.notifyProvider}` },
                )}
                {text('notifyChannelId', 'Notify channel id')}
                <Field errors={errors} field="notifyOn" label="When">
                  <select
                    {...errors.props('notifyOn')}
                    value={draft.notifyOn}
                    onChange={(e) => set('notifyOn', e.target.value as Draft['notifyOn'])}
                  >
                    <option value="always">always</option>
                    <option value="failure">on failure</option>
                    <option value="success">on success</option>
                    <option value="none">never</option>
                  </select>
                </Field>
              </>
            )}
          </div>
          <p className="hint">
            The message shows the job&apos;s number, outcome, ref, duration, exit code, outputs and a link to the job.
          </p>
        </fieldset>

        <div className="form-actions">
          <button type="submit" disabled={save.isPending}>
            {trigger ? 'Save trigger' : 'Create trigger'}
          </button>
          <Link to={trigger ? `/orgs/${orgId}/triggers/${trigger.id}` : `/orgs/${orgId}/triggers`}>Cancel</Link>
        </div>
      </form>
    </section>
  );
}

const TYPE_HINTS: Record<TriggerType, string> = {
  webhook: 'run with an API token: POST /v1/triggers/<id>/run',
  cron: 'runs on a schedule; no caller waits for its answer',
  slack: 'runs on a Slack command',
  discord: 'runs on a Discord command',
};

/** A labelled input with its hint and the API's messages for it. */
function Field(props: {
  errors: FieldErrors;
  field: string;
  label: string;
  hint?: ReactNode;
  wide?: boolean;
  check?: boolean;
  children: ReactNode;
}) {
  const { errors, field, label, hint, wide, check, children } = props;
  return (
    <div className={wide ? 'field wide' : 'field'}>
      {check ? (
        children
      ) : (
        <>
          <label htmlFor={errors.props(field).id}>{label}</label>
          {children}
        </>
      )}
      {hint && <span className="hint">{hint}</span>}
      <FieldError errors={errors} field={field} />
    </div>
  );
}

/** The organization's connected workspaces of each provider, offered as the team id inputs' choices. */
function WorkspaceOptions({ orgId }: { orgId: string }) {
  const integrations = useQuery(chatIntegrationsQuery(orgId));
  return (
    <>
      {(['slack', 'discord'] as const).map((provider) => (
        <datalist key={provider} id={`workspaces-${provider}`}>
          {(integrations.data ?? [])
            .filter((i) => i.provider === provider)
            .map((i) => (
              <option key={i.id} value={i.teamId}>
                {i.teamName}
              </option>
            ))}
        </datalist>
      ))}
    </>
  );
}

/** Whether the team id names a workspace connected to the organization: chat needs one. */
export function WorkspaceHint({ orgId, provider, teamId }: { orgId: string; provider: ChatProvider; teamId: string }) {
  const integrations = useQuery(chatIntegrationsQuery(orgId));
  if (!integrations.data) return null;
  const id = teamId.trim();
  const connected = integrations.data.find((i) => i.provider === provider && i.teamId === id);
  if (connected) return <>connected: {connected.teamName}</>;
  const words = `${PROVIDER_NAMES[provider]} ${TEAM_WORDS[provider]}`;
  if (id === '') return <>a {words} connected on the Integrations page</>;
  return (
    <strong className="warning">
      no {words} {id} is connected to this organization: <Link to={`/orgs/${orgId}/integrations`}>connect it</Link>
    </strong>
  );
}
