import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { formatLabels, MAX_LABELS } from '@drover/shared/labels';
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { api, ApiError, apiPath } from '../api/client';
import { agentQuery, agentsKey } from '../api/queries';
import type { Agent } from '../api/types';
import { ErrorMessage } from '../components/ErrorMessage';
import {
  labelsOf,
  newRow,
  rebaseLabels,
  rowProblems,
  rowsOf,
  rowsProblem,
  serverRowProblems,
  type LabelRow,
  type RowProblems,
} from '../components/label-rows';

/** Labels as rows; one empty row for none, to type the first into. */
function rowsOrBlank(labels: Record<string, string>): LabelRow[] {
  const rows = rowsOf(labels);
  return rows.length > 0 ? rows : [newRow()];
}

const inputId = (row: LabelRow, part: 'key' | 'value') => `label-${row.id}-${part}`;
/** What a row's key and value are called: their inputs' labels, and the start of their problems. */
const PART_NAMES = { key: 'Key', value: 'Value' } as const;

/**
 * The operators' labels of an agent as rows of key and value, added and removed one by one,
 * checked in the browser with the shared rules before they are sent; saving replaces the
 * operators' labels as a whole (no row: none). Each problem, the browser's or the coordinator's
 * (a 422 naming `body.labels.<key>`), is shown under its row.
 */
export function AgentLabelsForm(props: { orgId: string; agent: Agent; onClose: (saved: boolean) => void }) {
  const { orgId, agent, onClose } = props;
  const [rows, setRows] = useState<LabelRow[]>(() => rowsOrBlank(agent.operatorLabels));
  // The agent as the rows were made from it: a save replaces its labels at that revision only
  // (`If-Match`), never labels another tab, person or script set meanwhile (a 412, below).
  const [base, setBase] = useState(agent);
  /** The form was brought onto the agent as it is now, whose labels (or only name) had changed: said until the next save. */
  const [rebased, setRebased] = useState<'labels' | 'name' | null>(null);
  /** After the first save the rows are checked as they are typed; before it, nobody is told off mid-word. */
  const [checked, setChecked] = useState(false);
  const focusRow = useRef<number | null>(null);
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (labels: Record<string, string>) =>
      api<Agent>('PATCH', apiPath`/orgs/${orgId}/agents/${agent.id}`, {
        body: { labels },
        // A coordinator older than revisions answers none (during an upgrade): saved onto the labels as they are.
        headers: typeof base.revision === 'number' ? { 'if-match': `"${base.revision}"` } : {},
      }),
    onSuccess: (updated) => {
      queryClient.setQueryData(agentQuery(orgId, agent.id).queryKey, updated);
      void queryClient.invalidateQueries({ queryKey: agentsKey(orgId) });
      onClose(true);
    },
  });
  const changedElsewhere = save.error instanceof ApiError && save.error.statusCode === 412;
  // The agent as it is now: this form's changes made onto its labels, for the operator to check and save.
  const rebase = useMutation({
    mutationFn: () => queryClient.fetchQuery({ ...agentQuery(orgId, agent.id), staleTime: 0 }),
    onSuccess: (latest) => {
      const labelsMoved = formatLabels(latest.operatorLabels) !== formatLabels(base.operatorLabels);
      if (labelsMoved) setRows(rowsOrBlank(rebaseLabels(labelsOf(rows), base.operatorLabels, latest.operatorLabels)));
      setBase(latest);
      setRebased(labelsMoved ? 'labels' : 'name');
      save.reset();
    },
  });
  // The rows as they are must be labels first: a key typed twice would lose a row in the making.
  const makeOnto = () => {
    setChecked(true);
    if (rowProblems(rows).size === 0 && rowsProblem(rows) === null) rebase.mutate();
  };
  useEffect(() => {
    if (focusRow.current === null) return;
    document.getElementById(`label-${focusRow.current}-key`)?.focus();
    focusRow.current = null;
  });

  const local = checked ? rowProblems(rows) : new Map<number, RowProblems>();
  const whole = checked ? rowsProblem(rows) : null;
  const server =
    save.error instanceof ApiError
      ? serverRowProblems(save.error.details, rows)
      : { byRow: new Map<number, RowProblems>(), rest: [] };
  const problemsOf = (row: LabelRow): RowProblems => ({ ...server.byRow.get(row.id), ...local.get(row.id) });

  const change = (id: number, part: 'key' | 'value', text: string) =>
    setRows((current) => current.map((r) => (r.id === id ? { ...r, [part]: text } : r)));
  const add = () => {
    const row = newRow();
    focusRow.current = row.id;
    setRows((current) => [...current, row]);
  };
  const remove = (index: number) => {
    const next = rows.filter((_, i) => i !== index);
    // The keyboard stays in the list: on the row that took the removed one's place, or the one before.
    const neighbour = next[Math.min(index, next.length - 1)];
    focusRow.current = neighbour ? neighbour.id : null;
    setRows(next);
    if (!neighbour) document.getElementById('add-label')?.focus();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setChecked(true);
    const problems = rowProblems(rows);
    if (problems.size > 0 || rowsProblem(rows)) {
      const first = rows.find((r) => problems.has(r.id));
      if (first) document.getElementById(inputId(first, problems.get(first.id)!.key ? 'key' : 'value'))?.focus();
      return;
    }
    setRebased(null);
    save.mutate(labelsOf(rows));
  };
  const escape = (event: KeyboardEvent) => {
    if (event.key === 'Escape' && !save.isPending) onClose(false);
  };

  const refused = save.error instanceof ApiError && save.error.details.length > 0;
  const alert = (words: string) => (
    <div role="alert" className="error">
      <p>{words}</p>
    </div>
  );
  return (
    <form onSubmit={submit} onKeyDown={escape} noValidate className="labels-form" aria-labelledby="labels-form-heading">
      <h3 id="labels-form-heading">Edit the operators&apos; labels of {agent.name}</h3>
      <p className="hint">
        Saving replaces the operators&apos; labels as a whole; with no row, they are removed. Keys: 1 to 63 lowercase
        letters, digits, <code>.</code> <code>_</code> <code>/</code> <code>-</code>, starting and ending with a letter
        or digit; values: up to 63 letters, digits, <code>.</code> <code>_</code> <code>-</code>, possibly empty. At
        most {MAX_LABELS}.
      </p>
      {changedElsewhere ? (
        <div role="alert" className="error">
          <p>
            Nothing was saved: this agent was changed elsewhere since this form opened (its operators&apos; labels or
            its name).
          </p>
          <button type="button" onClick={makeOnto} disabled={rebase.isPending}>
            Make my changes onto its labels as they are now
          </button>
          {rebase.error ? <ErrorMessage error={rebase.error} /> : null}
        </div>
      ) : whole ? (
        alert(`Too many labels: ${whole}.`)
      ) : local.size > 0 || (refused && server.rest.length === 0) ? (
        alert('Some labels need a change; the reason is under each.')
      ) : save.error instanceof ApiError ? (
        // What names no row, in plain words; the rest is under the rows it names.
        <ErrorMessage error={new ApiError(save.error.statusCode, save.error.code, save.error.message, server.rest)} />
      ) : (
        <ErrorMessage error={save.error} />
      )}
      {rebased !== null && (
        <p role="status">
          {rebased === 'labels'
            ? 'Your changes are made onto the agent’s labels as they are now, with those set elsewhere: check them, then save.'
            : 'Only its name was changed elsewhere; its labels are as they were: save again.'}
        </p>
      )}
      {rows.length === 0 && <p>No label: saving removes the operators&apos; labels of this agent.</p>}
      <ol className="label-rows">
        {rows.map((row, index) => (
          <RowInputs
            key={row.id}
            row={row}
            index={index}
            problems={problemsOf(row)}
            onChange={change}
            onRemove={() => remove(index)}
          />
        ))}
      </ol>
      <div className="form-actions">
        <button type="button" id="add-label" onClick={add} disabled={rows.length >= MAX_LABELS}>
          Add a label
        </button>
        <button type="submit" disabled={save.isPending}>
          Save labels
        </button>
        <button type="button" onClick={() => onClose(false)} disabled={save.isPending}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function RowInputs(props: {
  row: LabelRow;
  index: number;
  problems: RowProblems;
  onChange: (id: number, part: 'key' | 'value', text: string) => void;
  onRemove: () => void;
}) {
  const { row, index, problems } = props;
  const name = `Label ${index + 1}`;
  const errorId = (part: keyof RowProblems) => `label-${row.id}-${part}-error`;
  const described = (part: 'key' | 'value') => {
    const ids = [problems[part] && errorId(part), problems.row && errorId('row')].filter(Boolean);
    return ids.length > 0 ? { 'aria-invalid': true as const, 'aria-describedby': ids.join(' ') } : {};
  };
  const input = (part: 'key' | 'value') => (
    <label>
      {PART_NAMES[part]}
      <input
        id={inputId(row, part)}
        value={row[part]}
        onChange={(e) => props.onChange(row.id, part, e.target.value)}
        spellCheck={false}
        autoCapitalize="off"
        autoComplete="off"
        {...described(part)}
      />
    </label>
  );
  return (
    <li className="label-row">
      <div role="group" aria-label={name} className="label-inputs">
        {input('key')}
        <span aria-hidden="true" className="label-equals">
          =
        </span>
        {input('value')}
        <button type="button" onClick={props.onRemove} aria-label={`Remove ${name.toLowerCase()}`}>
          Remove
        </button>
      </div>
      {(['key', 'value', 'row'] as const).map(
        (part) =>
          problems[part] && (
            <span key={part} id={errorId(part)} className="field-error">
              {part === 'row' ? problems.row : `${PART_NAMES[part]}: ${problems[part]}`}
            </span>
          ),
      )}
    </li>
  );
}
