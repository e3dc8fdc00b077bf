import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { agentWorkflowsQuery } from '../api/queries';
import type { Agent, Workflow } from '../api/types';
import { useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { describeParam, workflowLimitWords } from '../components/workflow-words';
import { WorkflowLimitsForm } from './WorkflowLimitsForm';

const DONE_WORDS = { saved: 'Limits saved.', unchanged: 'Nothing changed.', cancelled: '' } as const;

/**
 * The workflows an agent reported, each with its parameters and its rate limits; owners change
 * the limits of one at a time (`canLimit`), in a form under the table.
 */
export function AgentWorkflows(props: { orgId: string; agent: Agent; canLimit: boolean }) {
  const { orgId, agent } = props;
  const workflows = useQuery(agentWorkflowsQuery(orgId, agent.id));
  const [editing, setEditing] = useState<string | null>(null);
  const [done, setDone] = useState<{ name: string; words: string } | null>(null);
  const editable = props.canLimit && agent.status !== 'revoked';
  const list = workflows.data ?? [];
  const open = list.find((w) => w.id === editing);
  return (
    <section aria-labelledby="workflows-heading">
      <h2 id="workflows-heading">Workflows</h2>
      <p className="hint">
        The workflows the agent reported (the YAML files of its <code>workflows/</code> folder), read again when it
        connects. A rate limit counts the runs of a workflow on this agent, from every trigger and token together.
      </p>
      <ErrorMessage error={workflows.error} />
      {workflows.data && list.length === 0 && <p>None reported.</p>}
      {list.length > 0 && (
        <table className="workflow-limits">
          <thead>
            <tr>
              <th scope="col">Workflow</th>
              <th scope="col">Parameters</th>
              <th scope="col">Rate limits</th>
              {editable && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {list.map((w) => (
              <WorkflowRow
                key={w.id}
                workflow={w}
                editable={editable}
                editing={editing === w.id}
                onEdit={() => {
                  setDone(null);
                  setEditing(w.id);
                }}
              />
            ))}
          </tbody>
        </table>
      )}
      <p role="status" className="saved">
        {done?.words ? `${done.name}: ${done.words}` : ''}
      </p>
      {open && (
        <WorkflowLimitsForm
          key={open.id}
          orgId={orgId}
          agentName={agent.name}
          workflow={open}
          onClose={(result) => {
            setEditing(null);
            setDone({ name: open.name, words: DONE_WORDS[result] });
          }}
        />
      )}
    </section>
  );
}

function WorkflowRow(props: { workflow: Workflow; editable: boolean; editing: boolean; onEdit: () => void }) {
  const { workflow: w } = props;
  // Back from the form (saved, unchanged or cancelled): the keyboard returns to this row's button.
  const edit = useReturnFocus(props.editing);
  return (
    <tr aria-label={w.name}>
      <th scope="row">
        {w.name}
        {w.version && <span className="hint"> {w.version}</span>}
        {w.description && (
          <>
            <br />
            <span className="hint">{w.description}</span>
          </>
        )}
      </th>
      <td>
        {w.paramsSchema && w.paramsSchema.length > 0 ? (
          <ul className="params">
            {w.paramsSchema.map((p) => (
              <li key={p.name}>{describeParam(p)}</li>
            ))}
          </ul>
        ) : (
          <span className="hint">none</span>
        )}
      </td>
      <td>{workflowLimitWords(w)}</td>
      {props.editable && (
        <td>
          <button type="button" ref={edit} onClick={props.onEdit} disabled={props.editing}>
            Edit limits<span className="visually-hidden"> of {w.name}</span>
          </button>
        </td>
      )}
    </tr>
  );
}
