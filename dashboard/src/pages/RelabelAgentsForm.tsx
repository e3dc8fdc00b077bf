import { useQueryClient } from '@tanstack/react-query';
import { formatLabels, labelKeyProblem, parseLabelPairs } from '@drover/shared/labels';
import { counted } from '@drover/shared/counted';
import { useState, type FormEvent, type KeyboardEvent } from 'react';
import { api, apiPath } from '../api/client';
import { agentsKey } from '../api/queries';
import type { Schema } from '@drover/shared/api';
import { ErrorMessage } from '../components/ErrorMessage';
import { useMutation } from '../lib/mutation';

type Relabelled = Schema<'RelabelledAgents'>;

/** What the two inputs ask for, or what is wrong with them (checked in the browser first). */
type Change = { set: Record<string, string>; remove: string[] } | { problem: string };

/** `ring=canary, tier=gold` and `old legacy` as a change: labels to set, keys to remove. */
export function changeOf(setText: string, removeText: string): Change {
  const words = (text: string) => text.split(/[\s,]+/).filter((word) => word !== '');
  let set: Record<string, string>;
  try {
    set = parseLabelPairs(words(setText));
  } catch (error) {
    return { problem: `Labels to set: ${(error as Error).message}.` };
  }
  const remove = [...new Set(words(removeText))];
  for (const key of remove) {
    const problem = labelKeyProblem(key);
    if (problem) return { problem: `Labels to remove: ${problem}.` };
    if (Object.hasOwn(set, key)) return { problem: `The label ${key} is both set and removed.` };
  }
  if (Object.keys(set).length === 0 && remove.length === 0) {
    return { problem: 'Name a label to set (key=value) or a key to remove.' };
  }
  return { set, remove };
}

/** "12 of 14 agents (2 have the labels already)" */
/** A field of the change: labels as typed, never corrected by the browser. */
function ChangeField(props: { label: string; value: string; placeholder: string; onChange: (text: string) => void }) {
  return (
    <label>
      {props.label}
      <input
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        placeholder={props.placeholder}
        spellCheck={false}
        autoCapitalize="off"
        autoComplete="off"
      />
    </label>
  );
}

function howMany(answer: Relabelled): string {
  const already = answer.matching - answer.changed;
  return (
    `${answer.changed.toLocaleString('en-US')} of ${counted(answer.matching, 'agent')}` +
    (already > 0 ? ` (${already.toLocaleString('en-US')} ${already === 1 ? 'has' : 'have'} the labels already)` : '')
  );
}

/** The most agents a preview lists by name; the count says how many more. */
const LISTED = 50;

/**
 * The operators' labels of every agent a selector matches, changed at once (docs/fleets.md,
 * `POST /orgs/:orgId/agents/labels`): labels to set and keys to remove, checked here with the
 * shared rules, then a preview of what would change (the coordinator's dry run), then the change.
 */
export function RelabelAgentsForm(props: { orgId: string; selector: string; onClose: (done: string | null) => void }) {
  const { orgId, selector, onClose } = props;
  const [setText, setSetText] = useState('');
  const [removeText, setRemoveText] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const queryClient = useQueryClient();
  const call = (change: { set: Record<string, string>; remove: string[] }, dryRun: boolean) =>
    api<Relabelled>('POST', apiPath`/orgs/${orgId}/agents/labels`, { body: { selector, ...change, dryRun } });
  const preview = useMutation({
    mutationFn: (change: { set: Record<string, string>; remove: string[] }) => call(change, true),
  });
  const apply = useMutation({
    mutationFn: (change: { set: Record<string, string>; remove: string[] }) => call(change, false),
    onSuccess: async (answer) => {
      await queryClient.invalidateQueries({ queryKey: agentsKey(orgId) });
      onClose(`Labelled ${howMany(answer)}.`);
    },
  });
  const change = changeOf(setText, removeText);
  const edited = () => {
    setProblem(null);
    preview.reset();
    apply.reset();
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if ('problem' in change) return setProblem(change.problem);
    if (preview.data === undefined) preview.mutate(change);
    else apply.mutate(change);
  };
  const escape = (event: KeyboardEvent) => {
    if (event.key === 'Escape' && !apply.isPending) onClose(null);
  };
  const planned = preview.data;
  return (
    <form onSubmit={submit} onKeyDown={escape} noValidate className="relabel-form" aria-labelledby="relabel-heading">
      <h2 id="relabel-heading">
        Label the agents matching <code>{selector}</code>
      </h2>
      <p className="hint">
        Changes the operators&apos; labels of each agent the selector matches (revoked ones aside): the labels to set
        replace those of the same key, the keys to remove are taken off; the agents&apos; own labels stay. Preview what
        would change first.
      </p>
      {problem && (
        <div role="alert" className="error">
          <p>{problem}</p>
        </div>
      )}
      <ErrorMessage error={preview.error ?? apply.error} />
      <div className="form-grid">
        <ChangeField
          label="Labels to set"
          value={setText}
          placeholder="ring=canary, tier=gold"
          onChange={(text) => {
            setSetText(text);
            edited();
          }}
        />
        <ChangeField
          label="Labels to remove"
          value={removeText}
          placeholder="keys: old, legacy"
          onChange={(text) => {
            setRemoveText(text);
            edited();
          }}
        />
      </div>
      {planned && (
        <section aria-labelledby="relabel-preview-heading">
          <h3 id="relabel-preview-heading">Would change {howMany(planned)}</h3>
          {planned.agents.length > 0 && (
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Agent</th>
                    <th scope="col">Operators&apos; labels now</th>
                    <th scope="col">After</th>
                  </tr>
                </thead>
                <tbody>
                  {planned.agents.slice(0, LISTED).map((a) => (
                    <tr key={a.id}>
                      <th scope="row">{a.name}</th>
                      <td>{formatLabels(a.from) || 'none'}</td>
                      <td>{formatLabels(a.to) || 'none'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {planned.agents.length > LISTED && <p>And {counted(planned.agents.length - LISTED, 'more agent')}.</p>}
        </section>
      )}
      <div className="form-actions">
        {planned === undefined ? (
          <button type="submit" disabled={preview.isPending}>
            Preview
          </button>
        ) : (
          <button type="submit" disabled={apply.isPending || planned.changed === 0}>
            {`Change ${counted(planned.changed, 'agent')}`}
          </button>
        )}
        <button type="button" onClick={() => onClose(null)} disabled={apply.isPending}>
          Cancel
        </button>
      </div>
    </form>
  );
}
