import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent, type ReactNode } from 'react';
import { api, ApiError, apiPath } from '../api/client';
import {
  apiTokensQuery,
  STORAGE_PERMISSIONS,
  type Grant,
  type IssuedApiToken,
  type IssueRequest,
  type StoragePermission,
} from '../api/access';
import { agentChoicesQuery, type AgentChoice } from '../api/agent-pages';
import type { StorageBinding } from '../api/storage-bindings';
import { webhookChoicesQuery, type WebhookChoice } from '../api/triggers';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError, unreadableNumbers, type FieldErrors } from '../components/FieldErrors';
import { grantErrors, type Names } from '../components/grant-words';
import { SearchChoices, type ChoiceWords } from '../components/SearchChoices';
import { workflowWords } from '../components/trigger-words';
import { shortId } from '@drover/shared/short-id';
import { expiryOf } from './token-expiry';

const FIELDS = [
  'name',
  'agentIds',
  'triggerIds',
  'bindingIds',
  'permissions',
  'rateLimitPerMinute',
  'rateLimitPerHour',
  'rateLimitPerDay',
  'expiresAt',
] as const;

const DAY = 86_400_000;
const EXPIRIES = [
  { value: 'never', label: 'never' },
  { value: String(7 * DAY), label: 'in 7 days' },
  { value: String(30 * DAY), label: 'in 30 days' },
  { value: String(90 * DAY), label: 'in 90 days' },
  { value: String(365 * DAY), label: 'in 1 year' },
  { value: 'at', label: 'at a date…' },
];

interface Draft {
  name: string;
  agents: AgentChoice[];
  triggers: WebhookChoice[];
  storage: 'none' | 'all' | 'some';
  bindingIds: string[];
  permissions: StoragePermission[];
  perMinute: string;
  perHour: string;
  perDay: string;
  expiry: string;
  expiresAt: string;
}

const EMPTY: Draft = {
  name: '',
  agents: [],
  triggers: [],
  storage: 'none',
  bindingIds: [],
  permissions: ['read'],
  perMinute: '',
  perHour: '',
  perDay: '',
  expiry: 'never',
  expiresAt: '',
};

/** An empty input: no limit; anything else is sent as typed, for the coordinator to judge. */
const limitOf = (text: string): number | null => (text.trim() === '' ? null : Number(text));

/**
 * The request for the draft. A grant type with nothing chosen is left out; storage chosen with
 * no binding or no permission is sent as it is, so that the coordinator says what is missing.
 */
export function requestOf(d: Draft): IssueRequest {
  const scopes: Grant[] = [];
  if (d.agents.length > 0) scopes.push({ type: 'agent', agentIds: d.agents.map((a) => a.id) });
  if (d.triggers.length > 0) scopes.push({ type: 'trigger', triggerIds: d.triggers.map((t) => t.id) });
  if (d.storage !== 'none') {
    scopes.push({
      type: 'storage',
      bindingIds: d.storage === 'all' ? null : d.bindingIds,
      permissions: STORAGE_PERMISSIONS.filter((p) => d.permissions.includes(p)),
    });
  }
  return {
    name: d.name,
    scopes,
    rateLimitPerMinute: limitOf(d.perMinute),
    rateLimitPerHour: limitOf(d.perHour),
    rateLimitPerDay: limitOf(d.perDay),
    ...expiryOf(d),
  };
}

const toggle = <T,>(list: T[], item: T, on: boolean): T[] =>
  on ? [...list.filter((x) => x !== item), item] : list.filter((x) => x !== item);

/** An item ticked or unticked in a list of choices: kept by id (a refreshed search makes new objects). */
const toggleItem = <T extends { id: string }>(list: T[], item: T, on: boolean): T[] =>
  on ? [...list.filter((x) => x.id !== item.id), item] : list.filter((x) => x.id !== item.id);

const TRIGGER_WORDS: ChoiceWords = {
  find: 'Find triggers by name',
  placeholder: 'Find by name',
  one: 'webhook trigger',
  many: 'webhook triggers',
};
const AGENT_WORDS: ChoiceWords = {
  find: 'Find agents by name',
  placeholder: 'Find by name or hostname',
  one: 'agent',
  many: 'agents',
};

/**
 * Issue an API token: name, grants (the organization's webhook triggers and agents found by name
 * on the coordinator, its storage bindings), limits, expiry.
 */
export function IssueTokenForm(props: {
  orgId: string;
  bindings: StorageBinding[];
  /** The names of the page's agents, triggers and bindings, for the API's refusals. */
  names: Names;
  loadError: unknown;
  onIssued: (token: IssuedApiToken) => void;
}) {
  const { orgId, bindings, onIssued } = props;
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const queryClient = useQueryClient();
  const issue = useMutation({
    mutationFn: ({ body, unreadable }: { body: IssueRequest; unreadable: ApiError | null }) => {
      // A limit the browser cannot read as a number would be sent as none: no limit at all.
      if (unreadable) throw unreadable;
      return api<IssuedApiToken>('POST', apiPath`/orgs/${orgId}/api-tokens`, { body });
    },
    onSuccess: (token) => {
      setDraft(EMPTY);
      onIssued(token);
      void queryClient.invalidateQueries({ queryKey: apiTokensQuery(orgId).queryKey });
    },
  });
  // The names of what is chosen too: a refusal names a revoked agent or a deleted trigger by id.
  const names: Names = new Map([
    ...props.names,
    ...[...draft.agents, ...draft.triggers].map((item) => [item.id, item.name] as const),
  ]);
  const error = grantErrors(issue.error, issue.variables?.body.scopes, names);
  const errors = fieldErrors(error, FIELDS, 'body', 'token');
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    issue.mutate({ body: requestOf(draft), unreadable: unreadableNumbers(event.currentTarget, 'body', 'token') });
  };
  const limit = (key: 'perMinute' | 'perHour' | 'perDay', field: (typeof FIELDS)[number], label: string) => (
    <Field errors={errors} field={field} label={label}>
      <input
        {...errors.props(field)}
        type="number"
        min={1}
        step={1}
        value={draft[key]}
        placeholder="no limit"
        onChange={(e) => set(key, e.target.value)}
      />
    </Field>
  );
  return (
    <section aria-labelledby="issue-token-heading" className="panel">
      <h2 id="issue-token-heading">Issue an API token</h2>
      <ErrorMessage error={props.loadError} />
      <form onSubmit={submit} noValidate>
        <FormError error={error} errors={errors} />
        <div className="form-grid">
          <Field errors={errors} field="name" label="Name" hint="tells tokens apart in lists and the audit log">
            <input {...errors.props('name')} value={draft.name} onChange={(e) => set('name', e.target.value)} />
          </Field>
        </div>

        <Group errors={errors} field="triggerIds" legend="Run triggers">
          {/* A token runs webhook triggers only: cron triggers run on their schedule, chat ones from their channel. */}
          <SearchChoices
            search={(text) => webhookChoicesQuery(orgId, text)}
            words={TRIGGER_WORDS}
            chosen={draft.triggers}
            onToggle={(t, on) => setDraft((d) => ({ ...d, triggers: toggleItem(d.triggers, t, on) }))}
            describe={(t) => <span className="hint">({choiceTriggerWords(t)})</span>}
            noneFound={(text) => `No webhook trigger has “${text}” in its name.`}
            noneAtAll="This organization has no webhook trigger yet."
          />
          <p className="hint">
            <code>POST /v1/triggers/&lt;id&gt;/run</code>; discovery then shows each trigger&apos;s agent and workflow.
            Webhook triggers only: cron triggers run on their schedule, chat triggers from their channel.
          </p>
        </Group>

        <Group errors={errors} field="agentIds" legend="Read agents and their workflows">
          <SearchChoices
            search={(text) => agentChoicesQuery(orgId, text)}
            words={AGENT_WORDS}
            chosen={draft.agents}
            onToggle={(a, on) => setDraft((d) => ({ ...d, agents: toggleItem(d.agents, a, on) }))}
            offered={(a) => a.status !== 'revoked'}
            describe={(a) => (
              <span className="hint">
                ({a.workflows.length > 0 ? `workflows: ${a.workflows.join(', ')}` : 'no workflow reported'})
              </span>
            )}
            noneFound={(text) => `No agent has “${text}” in its name or hostname.`}
            noneAtAll="This organization has no agent yet."
          />
          <p className="hint">
            <code>GET /v1/agents</code>, <code>/v1/devices</code> and <code>/v1/workflows</code> show these agents.
          </p>
        </Group>

        <Group errors={errors} field="bindingIds" legend="Files (storage)">
          <div className="field">
            <label htmlFor="token-storage">Storage bindings</label>
            <select
              id="token-storage"
              value={draft.storage}
              onChange={(e) => set('storage', e.target.value as Draft['storage'])}
            >
              <option value="none">no file access</option>
              <option value="all">every binding of the organization</option>
              <option value="some">the bindings chosen below</option>
            </select>
          </div>
          {draft.storage === 'some' &&
            bindings.map((b) => (
              <label key={b.id} className="check">
                <input
                  type="checkbox"
                  checked={draft.bindingIds.includes(b.id)}
                  onChange={(e) => set('bindingIds', toggle(draft.bindingIds, b.id, e.target.checked))}
                />
                <span>
                  {b.name} <span className="hint">({b.backend})</span>
                </span>
              </label>
            ))}
          {draft.storage !== 'none' && (
            <fieldset
              className="permissions"
              {...(errors.of('permissions').length > 0 ? { 'aria-describedby': 'token-permissions-error' } : {})}
            >
              <legend>Permissions</legend>
              {STORAGE_PERMISSIONS.map((p) => (
                <label key={p} className="check">
                  <input
                    type="checkbox"
                    checked={draft.permissions.includes(p)}
                    onChange={(e) => set('permissions', toggle(draft.permissions, p, e.target.checked))}
                  />
                  {p}
                </label>
              ))}
              <FieldError errors={errors} field="permissions" idPrefix="token" />
            </fieldset>
          )}
        </Group>

        <fieldset>
          <legend>Job limits</legend>
          <p className="hint">
            The most runs this token may start in each UTC minute, hour and day, on top of each workflow&apos;s own
            limits. Empty: no limit. They cannot be changed later.
          </p>
          <div className="form-grid">
            {limit('perMinute', 'rateLimitPerMinute', 'Per minute')}
            {limit('perHour', 'rateLimitPerHour', 'Per hour')}
            {limit('perDay', 'rateLimitPerDay', 'Per day')}
          </div>
        </fieldset>

        <div className="form-grid">
          <Field errors={errors} field="expiresAt" label="Expires" inputId="token-expiry">
            <select id="token-expiry" value={draft.expiry} onChange={(e) => set('expiry', e.target.value)}>
              {EXPIRIES.map((x) => (
                <option key={x.value} value={x.value}>
                  {x.label}
                </option>
              ))}
            </select>
          </Field>
          {draft.expiry === 'at' && (
            <div className="field">
              <label htmlFor={errors.props('expiresAt').id}>Expires at (your time zone)</label>
              <input
                {...errors.props('expiresAt')}
                type="datetime-local"
                value={draft.expiresAt}
                onChange={(e) => set('expiresAt', e.target.value)}
              />
            </div>
          )}
        </div>

        <div className="form-actions">
          <button type="submit" disabled={issue.isPending}>
            Issue token
          </button>
        </div>
      </form>
    </section>
  );
}

function choiceTriggerWords(t: WebhookChoice): string {
  const agent = t.agentId === null ? `agents ${t.agentSelector}` : (t.agentName ?? shortId(t.agentId));
  return `${agent} · ${workflowWords(t)}`;
}

/** A labelled input with its hint and the API's messages for it. */
function Field(props: {
  errors: FieldErrors;
  field: string;
  label: string;
  hint?: ReactNode;
  inputId?: string;
  children: ReactNode;
}) {
  const { errors, field, label, hint, inputId, children } = props;
  return (
    <div className="field">
      <label htmlFor={inputId ?? errors.props(field).id}>{label}</label>
      {children}
      {hint && <span className="hint">{hint}</span>}
      <FieldError errors={errors} field={field} idPrefix="token" />
    </div>
  );
}

/** A group of checkboxes (one grant type), with the API's messages for it under its legend. */
function Group(props: { errors: FieldErrors; field: string; legend: string; children: ReactNode }) {
  const { errors, field, legend, children } = props;
  const invalid = errors.of(field).length > 0;
  return (
    <fieldset
      className={invalid ? 'grant invalid' : 'grant'}
      id={errors.props(field).id}
      {...(invalid ? { 'aria-describedby': `token-${field}-error` } : {})}
    >
      <legend>{legend}</legend>
      <FieldError errors={errors} field={field} idPrefix="token" />
      {children}
    </fieldset>
  );
}
