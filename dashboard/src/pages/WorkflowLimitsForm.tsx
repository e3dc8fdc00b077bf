import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent, type KeyboardEvent } from 'react';
import { api, ApiError, apiPath } from '../api/client';
import { workflowsKey } from '../api/queries';
import type { Workflow } from '../api/types';
import { FieldError, fieldErrors, FormError, unreadableNumbers } from '../components/FieldErrors';
import { useMutation } from '../lib/mutation';
import {
  FIELDS,
  ID_PREFIX,
  limitsPatch,
  MAX_LIMIT,
  textsOf,
  WINDOWS,
  type LimitsPatch,
} from '../components/limit-texts';

/**
 * An owner's form for one workflow's rate limits on its agent: the three windows, each empty for
 * no limit; saving sends the windows changed (`PATCH`), each refusal under its input.
 */
export function WorkflowLimitsForm(props: {
  orgId: string;
  agentName: string;
  workflow: Workflow;
  onClose: (result: 'saved' | 'unchanged' | 'cancelled') => void;
}) {
  const { orgId, workflow, onClose } = props;
  const [opened] = useState(() => textsOf(workflow));
  const [typed, setTyped] = useState(opened);
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: ({ body, unreadable }: { body: LimitsPatch; unreadable: ApiError | null }) => {
      // Text the browser cannot read as a number would be sent as empty: no limit at all.
      if (unreadable) throw unreadable;
      return api<Workflow>('PATCH', apiPath`/orgs/${orgId}/workflows/${workflow.id}`, { body });
    },
    onSuccess: async () => {
      // Every list of workflows (this agent's, the Agents page's, the organization's) shows the new limits.
      await queryClient.invalidateQueries({ queryKey: workflowsKey(orgId) });
      onClose('saved');
    },
  });
  const errors = fieldErrors(save.error, FIELDS, 'body', ID_PREFIX);
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const unreadable = unreadableNumbers(event.currentTarget, 'body', ID_PREFIX);
    const body = limitsPatch(opened, typed);
    if (!unreadable && Object.keys(body).length === 0) return onClose('unchanged');
    save.mutate({ body, unreadable });
  };
  const escape = (event: KeyboardEvent) => {
    if (event.key === 'Escape' && !save.isPending) onClose('cancelled');
  };
  const heading = `limits-form-${workflow.id}`;
  return (
    <form onSubmit={submit} onKeyDown={escape} noValidate className="limits-form" aria-labelledby={heading}>
      <h3 id={heading}>
        Rate limits of {workflow.name} on {props.agentName}
      </h3>
      <p className="hint">
        The most runs of this workflow on this agent in each UTC minute, hour and day, from every trigger, token and
        member together; a run past one is refused (429) unless an owner forces it. Empty: no limit. A whole number from
        1 to {MAX_LIMIT.toLocaleString('en-US')}.
      </p>
      <FormError error={save.error} errors={errors} />
      <div className="form-grid">
        {WINDOWS.map(({ field, label }, i) => (
          <div className="field" key={field}>
            <label htmlFor={errors.props(field).id}>{label}</label>
            <input
              {...errors.props(field)}
              type="number"
              min={1}
              max={MAX_LIMIT}
              step={1}
              data-example="60"
              placeholder="no limit"
              value={typed[field]}
              autoFocus={i === 0}
              onChange={(e) => setTyped((t) => ({ ...t, [field]: e.target.value }))}
            />
            <FieldError errors={errors} field={field} idPrefix={ID_PREFIX} />
          </div>
        ))}
      </div>
      <div className="form-actions">
        <button type="submit" disabled={save.isPending}>
          Save limits
        </button>
        <button type="button" disabled={save.isPending} onClick={() => onClose('cancelled')}>
          Cancel
        </button>
      </div>
    </form>
  );
}
