import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import type { Schema } from '@drover/shared/api';
import type { Requirement } from '@drover/shared/labels';
import { useState, type FormEvent } from 'react';
import { api, apiPath } from '../api/client';
import { deviceGroupPreviewQuery, type App, type DeviceCount } from '../api/ota';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { fieldErrors, FormError } from '../components/FieldErrors';
import { parseSelectorText, SelectorInput } from '../components/SelectorInput';
import { listedWords } from '../components/SelectorMatches';
import { counted } from '@drover/shared/counted';

type AppUpdate = Schema<'ApplicationUpdate'>;

/** What removing the device group does, asked before it is done: `made`, the bindings it made (undefined: not read yet). */
function removalWords(made: number | undefined): string {
  const bindings = made === undefined ? 'the bindings it made' : `the ${made} binding${made === 1 ? '' : 's'} it made`;
  return `Remove the device group? ${bindings[0]!.toUpperCase()}${bindings.slice(1)} go (their pending update jobs cancelled); bindings made by hand stay.`;
}

/**
 * What applying the selector would do now, as the coordinator works it out by the rule that
 * applies it (`device-group/preview`): the agents it matches (revoked ones aside, the first few by
 * name), those it would bind, and the bindings it made that it would remove. Followed live (a
 * status region).
 */
function Preview(props: { orgId: string; app: App; text: string; requirements: Requirement[] | null }) {
  const { orgId, app, text, requirements } = props;
  const ready = requirements !== null && requirements.length > 0;
  const preview = useQuery({ ...deviceGroupPreviewQuery(orgId, app.id, text.trim()), enabled: ready });
  let words = '';
  if (requirements === null) words = '';
  else if (requirements.length === 0) words = 'Type a selector to see which agents it matches.';
  else if (preview.error) words = `The coordinator could not preview it: ${preview.error.message}`;
  else if (!preview.data) words = 'Reading the agents…';
  else {
    const { matching, names, toBind, toRemove } = preview.data;
    words =
      matching === 0
        ? 'No agent matches now: the selector binds nothing until one does.'
        : `${matching === 1 ? '1 agent matches' : `${counted(matching, 'agent')} match`} now: ${listedWords(names, matching)}.`;
    words += ` Applying it binds ${counted(toBind, 'agent')}`;
    words += toRemove > 0 ? ` and removes ${counted(toRemove, 'binding')} it made.` : '.';
  }
  return (
    <p role="status" className="selector-matches">
      {words}
    </p>
  );
}

/** What the coordinator answered, in words: `role=kiosk matches 2 agents: 2 bound, 0 removed.` */
function outcomeWords(app: AppUpdate): string {
  const group = app.deviceGroup;
  if (!group) return '';
  if (app.deviceSelector === null) return `Device group removed: ${counted(group.unbound, 'binding')} it made removed.`;
  const matches =
    group.matching === 0 ? 'matches no agent: nothing is bound' : `matches ${counted(group.matching, 'agent')}`;
  return `${app.deviceSelector} ${matches}; ${group.bound} bound, ${group.unbound} removed.`;
}

/**
 * An application's device group: a label selector whose matching agents are bound to it (on the
 * default channel) and unbound when they stop matching; bindings made by hand stay. A live
 * preview says which agents it matches and what applying it does; the answer says what it did.
 */
export function DeviceGroupForm(props: { orgId: string; app: App; counts?: DeviceCount[] }) {
  const { orgId, app, counts } = props;
  const [text, setText] = useState(app.deviceSelector ?? '');
  const [confirmingRemove, setConfirmingRemove] = useState(false);
  const opener = useReturnFocus(confirmingRemove);
  const parsed = parseSelectorText(text);
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (deviceSelector: string | null) =>
      api<AppUpdate>('PATCH', apiPath`/orgs/${orgId}/apps/${app.id}`, { body: { deviceSelector } }),
    onSuccess: (answer) => {
      setText(answer.deviceSelector ?? '');
      setConfirmingRemove(false);
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps'] });
    },
  });
  const errors = fieldErrors(save.error, ['deviceSelector'], 'body', 'group');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(text);
  };
  const empty = parsed.requirements !== null && parsed.requirements.length === 0;
  return (
    <form className="panel" onSubmit={submit} noValidate aria-labelledby="group-heading">
      <h3 id="group-heading">Device group</h3>
      <p className="hint">
        {app.deviceSelector === null ? (
          <>No device group: devices are bound by hand only.</>
        ) : (
          <>
            Every agent matching <code>{app.deviceSelector}</code> is bound on the default channel ({app.defaultChannel}
            ) as soon as it matches, and unbound when it stops matching. Bindings made by hand stay.
          </>
        )}
      </p>
      <FormError error={save.error} errors={errors} />
      <SelectorInput
        id={errors.props('deviceSelector').id}
        label="Device selector"
        value={text}
        onChange={setText}
        parsed={parsed}
        refusals={save.variables === text ? errors.of('deviceSelector') : []}
      >
        <Preview orgId={orgId} app={app} text={text} requirements={parsed.requirements} />
      </SelectorInput>
      {confirmingRemove && app.deviceSelector !== null ? (
        // One click would unbind a whole fleet's devices, some maybe in the middle of an update.
        <Confirm label="Remove the device group" onCancel={() => setConfirmingRemove(false)}>
          <p>{removalWords(counts?.reduce((sum, g) => sum + (g.origin === 'selector' ? g.devices : 0), 0))}</p>
          <button type="button" className="danger" onClick={() => save.mutate(null)} disabled={save.isPending}>
            Remove device group
          </button>
          <button type="button" onClick={() => setConfirmingRemove(false)}>
            Keep it
          </button>
        </Confirm>
      ) : (
        <div className="actions">
          <button type="submit" disabled={save.isPending || parsed.error !== null || empty}>
            Apply device group
          </button>
          {app.deviceSelector !== null && (
            <button type="button" ref={opener} onClick={() => setConfirmingRemove(true)} disabled={save.isPending}>
              Remove device group
            </button>
          )}
        </div>
      )}
      <p role="status" className="group-outcome">
        {save.data ? outcomeWords(save.data) : ''}
      </p>
    </form>
  );
}
