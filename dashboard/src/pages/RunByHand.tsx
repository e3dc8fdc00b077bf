import type { ParamDefinition } from '@drover/shared/params';
import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, ApiError, apiPath, type ErrorDetail } from '../api/client';
import type { RequestBody, Schema } from '@drover/shared/api';
import { answerPage, isRunResult, type RunAnswer, type Trigger } from '../api/triggers';
import type { Workflow, WorkflowParam } from '../api/types';
import { FieldError, fieldErrors, FormError, unreadableNumbers, type FieldErrors } from '../components/FieldErrors';
import { FileParamPicker } from '../components/FileParamPicker';

/** A param's input as typed: text (string, number, chosen file id, enum option index) or a checkbox. */
type ParamValues = Record<string, string | boolean>;

const RUN_FIELDS = ['ref', 'debug', 'force', 'forceReason'] as const;

/** The initial inputs: each param's default, when it has one. */
function initialValues(schema: WorkflowParam[]): ParamValues {
  const values: ParamValues = {};
  for (const p of schema) {
    if (p.type === 'boolean') values[p.name] = p.default === true;
    else if (p.type === 'enum') {
      const index = p.default === undefined ? -1 : (p.options ?? []).findIndex((o) => o === p.default);
      values[p.name] = index >= 0 ? String(index) : '';
    } else if (p.type === 'file') values[p.name] = '';
    else values[p.name] = p.default === undefined ? '' : String(p.default);
  }
  return values;
}

/**
 * The params to send: each filled input in its type; an empty input is left out, so that the
 * workflow's default applies (and a required one without default is refused by the API, inline).
 */
export function paramsOf(schema: WorkflowParam[], values: ParamValues): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const p of schema) {
    const v = values[p.name];
    if (typeof v === 'boolean') {
      params[p.name] = v;
      continue;
    }
    if (v === undefined || v === '') continue;
    if (p.type === 'number') params[p.name] = Number(v);
    else if (p.type === 'enum') params[p.name] = (p.options ?? [])[Number(v)];
    else if (p.type === 'file') params[p.name] = { __type: 'FileRef', id: v.trim() };
    else params[p.name] = v;
  }
  return params;
}

/**
 * The problems the API would answer for the params given, found in the page with the API's own
 * rules and pattern engine (@drover/shared/params, fetched at the first run by hand; the engine
 * only for a workflow with a pattern), so that a bad value is shown at once, as the API's 422
 * would be. What the page cannot know (a missing required param, a file's state) is still the
 * API's to say.
 */
export async function paramProblems(schema: WorkflowParam[], params: Record<string, unknown>): Promise<ErrorDetail[]> {
  const { loadPatternEngine, paramValueProblem, PatternBudget } = await import('@drover/shared/params');
  if (schema.some((p) => p.pattern !== undefined)) await loadPatternEngine();
  const budget = new PatternBudget();
  const details: ErrorDetail[] = [];
  for (const p of schema) {
    if (!Object.hasOwn(params, p.name)) continue;
    const problem = paramValueProblem(p as ParamDefinition, params[p.name], budget);
    if (problem) details.push({ path: `body.params.${p.name}`, message: problem });
  }
  return details;
}

/**
 * Run the trigger now (`POST /orgs/:orgId/triggers/:id/run`) with a form made from the params
 * schema. `workflows`: those of the agents a run goes to (the trigger's agent, or the agents its
 * selector matches now).
 */
export function RunByHand(props: { orgId: string; trigger: Trigger; workflows: Workflow[]; mayForce: boolean }) {
  const { trigger, workflows } = props;
  const [chosen, setChosen] = useState(trigger.workflowName ?? workflows[0]?.name ?? '');
  const name = trigger.scopeType === 'workflow' ? (trigger.workflowName ?? '') : chosen || (workflows[0]?.name ?? '');
  const versions = workflows.filter((w) => w.name === name);
  const workflow = versions[0];
  // Agents of a selector may report versions of the workflow with other params: each checks the
  // params against its own, so the page checks none of them before sending.
  const schemas = new Set(versions.map((w) => JSON.stringify(w.paramsSchema ?? [])));
  const onSelector = trigger.agentSelector !== null;
  const batch = onSelector && trigger.fanout === 'all';
  return (
    <div className="panel">
      <h2>Run by hand</h2>
      {trigger.scopeType === 'agent' && (
        <div className="field">
          <label htmlFor="run-workflow">Workflow to run</label>
          <select id="run-workflow" value={name} onChange={(e) => setChosen(e.target.value)}>
            {workflows.length === 0 && <option value="">the agent reported none</option>}
            {workflows.map((w) => (
              <option key={w.id} value={w.name}>
                {w.name}
              </option>
            ))}
          </select>
        </div>
      )}
      {!workflow && name !== '' && !onSelector && (
        <p className="hint">The agent has not reported the workflow {name}; a run is refused until it does.</p>
      )}
      {onSelector && (
        <p className="hint">
          {batch
            ? "A run makes a batch: one job on each agent the selector matches then, and the batch's page opens."
            : 'A run makes one job, for one of the agents the selector matches: the least busy with room, or the first to have room.'}
          {!workflow &&
            name !== '' &&
            ` None of the agents it matches now reports the workflow ${name}: their jobs would be rejected.`}
          {schemas.size > 1 &&
            ` The agents report ${schemas.size} versions of ${name} with different params: the form shows those of one of them, and each agent checks the params against its own version (one that refuses them gets a rejected job).`}
        </p>
      )}
      {/* A new workflow gets a fresh form: its own params and defaults. */}
      <RunForm
        key={`${name}:${workflow?.id ?? ''}`}
        {...props}
        workflowName={name}
        schema={workflow?.paramsSchema ?? []}
        checkInPage={schemas.size <= 1}
      />
    </div>
  );
}

function RunForm(props: {
  orgId: string;
  trigger: Trigger;
  mayForce: boolean;
  workflowName: string;
  schema: WorkflowParam[];
  /** Whether the params are checked in the page before sending: the schema is the one every agent has. */
  checkInPage: boolean;
}) {
  const { orgId, trigger, mayForce, workflowName, schema, checkInPage } = props;
  const [values, setValues] = useState<ParamValues>(() => initialValues(schema));
  const [ref, setRef] = useState(trigger.allowedRefs?.[0] ?? '');
  const [debug, setDebug] = useState(false);
  const [force, setForce] = useState(false);
  const [forceReason, setForceReason] = useState('');
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const run = useMutation({
    mutationFn: async (unreadable: ApiError | null) => {
      // A number the browser cannot read would be left out, and the workflow's default run instead.
      if (unreadable) throw unreadable;
      const params = paramsOf(schema, values);
      const problems = checkInPage ? await paramProblems(schema, params) : [];
      // The 422 the API would answer, placed under the fields the same way.
      if (problems.length > 0) throw new ApiError(422, 'validation_failed', 'A param is not valid', problems);
      const body: RequestBody<'runTriggerByHand'> = { params };
      if (trigger.scopeType === 'agent') body.workflowName = workflowName;
      if (ref.trim() !== '') body.ref = ref.trim();
      if (debug) body.debug = true;
      if (force) {
        body.force = true;
        body.forceReason = forceReason;
      }
      return api<RunAnswer>('POST', apiPath`/orgs/${orgId}/triggers/${trigger.id}/run`, { body });
    },
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'triggers', trigger.id] }),
  });
  const errors = fieldErrors(run.error, RUN_FIELDS, 'body', 'run');
  const paramErrors = fieldErrors(
    run.error,
    schema.map((p) => p.name),
    'body.params',
    'param',
  );
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    run.mutate(unreadableNumbers(event.currentTarget, 'body.params', 'param'), {
      // A sync job's result is shown here; a job accepted, or a batch, has its own page. Opened only
      // while this form is shown: a run answered after the operator went elsewhere leaves them there.
      onSuccess: (answer) => {
        if (!isRunResult(answer)) void navigate(answerPage(answer));
      },
    });
  };
  // What neither the run's fields nor the params' inputs show stays in the alert.
  const unplaced = errors.rest.filter((d) => paramErrors.rest.includes(d));
  return (
    <form onSubmit={submit} noValidate aria-label="Run by hand">
      <FormError error={run.error} errors={{ ...errors, rest: unplaced }} />
      {schema.length > 0 && (
        <fieldset>
          <legend>Params of {workflowName}</legend>
          <div className="form-grid">
            {schema.map((p) => (
              <ParamInput
                key={p.name}
                orgId={orgId}
                param={p}
                value={values[p.name]}
                errors={paramErrors}
                onChange={(v) => setValues((old) => ({ ...old, [p.name]: v }))}
              />
            ))}
          </div>
        </fieldset>
      )}
      {schema.length === 0 && workflowName !== '' && <p className="hint">This workflow declares no params.</p>}
      <div className="form-grid">
        <div className="field">
          {trigger.allowedRefs ? (
            <>
              <label htmlFor="run-ref">Ref</label>
              <select {...errors.props('ref')} value={ref} onChange={(e) => setRef(e.target.value)}>
                {trigger.allowedRefs.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </>
          ) : (
            <>
              <label htmlFor="run-ref">Ref (optional)</label>
              <input {...errors.props('ref')} value={ref} onChange={(e) => setRef(e.target.value)} />
            </>
          )}
          <FieldError errors={errors} field="ref" idPrefix="run" />
        </div>
        {trigger.allowDebug && (
          <div className="field">
            <label className="check">
              <input
                {...errors.props('debug')}
                type="checkbox"
                checked={debug}
                onChange={(e) => setDebug(e.target.checked)}
              />
              Debug run
            </label>
            <FieldError errors={errors} field="debug" idPrefix="run" />
          </div>
        )}
        {mayForce && (
          <div className="field">
            <label className="check">
              <input
                {...errors.props('force')}
                type="checkbox"
                checked={force}
                onChange={(e) => setForce(e.target.checked)}
              />
              Force: run past the workflow&apos;s rate limit
            </label>
            <FieldError errors={errors} field="force" idPrefix="run" />
          </div>
        )}
        {mayForce && force && (
          <div className="field">
            <label htmlFor="run-forceReason">Reason for forcing</label>
            <input
              {...errors.props('forceReason')}
              value={forceReason}
              onChange={(e) => setForceReason(e.target.value)}
            />
            <FieldError errors={errors} field="forceReason" idPrefix="run" />
          </div>
        )}
      </div>
      <div className="form-actions">
        <button type="submit" disabled={run.isPending}>
          Run now
        </button>
      </div>
      {run.isPending && trigger.responseMode === 'sync' && (
        <p role="status">
          Waiting for the result: this trigger answers once{' '}
          {trigger.agentSelector !== null && trigger.fanout === 'all' ? 'every job of its batch has' : 'the job has'}{' '}
          ended (at most {trigger.responseTimeoutMs / 1000} s)…
        </p>
      )}
      {run.data && isRunResult(run.data) && <SyncResult answer={run.data} />}
    </form>
  );
}

function SyncResult({ answer }: { answer: Schema<'RunResult'> }) {
  return (
    <div role="status" className="panel run-result">
      <p>
        {answer.timedOut ? 'The wait is over and the job runs on: ' : 'The job ended: '}
        <span className={`status status-${answer.status}`}>{answer.status}</span>
        {answer.exitCode !== null && answer.exitCode !== undefined && <> (exit code {answer.exitCode})</>}.{' '}
        <Link to={`/api/jobs/${answer.jobId}`}>Open the job</Link>
      </p>
      {answer.errorMessage && <p>{answer.errorMessage}</p>}
      {answer.output && Object.keys(answer.output).length > 0 && (
        <pre aria-label="Output">{JSON.stringify(answer.output, null, 2)}</pre>
      )}
    </div>
  );
}

function ParamInput(props: {
  orgId: string;
  param: WorkflowParam;
  value: string | boolean | undefined;
  errors: FieldErrors;
  onChange: (value: string | boolean) => void;
}) {
  const { param: p, value, errors, onChange } = props;
  const attrs = errors.props(p.name);
  const hint = paramHint(p);
  if (p.type === 'boolean') {
    return (
      <div className="field">
        <label className="check">
          <input {...attrs} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
          {p.name}
        </label>
        {hint && <span className="hint">{hint}</span>}
        <FieldError errors={errors} field={p.name} idPrefix="param" />
      </div>
    );
  }
  const text = typeof value === 'string' ? value : '';
  let input;
  if (p.type === 'enum') {
    input = (
      <select {...attrs} value={text} onChange={(e) => onChange(e.target.value)} required={p.required}>
        {(!p.required || p.default === undefined) && (
          <option value="">{p.default === undefined ? '—' : 'default'}</option>
        )}
        {(p.options ?? []).map((o, i) => (
          <option key={String(i)} value={String(i)}>
            {String(o)}
          </option>
        ))}
      </select>
    );
  } else if (p.type === 'number') {
    input = (
      <input
        {...attrs}
        type="number"
        step="any"
        min={p.min}
        max={p.max}
        value={text}
        required={p.required}
        onChange={(e) => onChange(e.target.value)}
      />
    );
  } else if (p.type === 'file') {
    input = (
      <FileParamPicker
        orgId={props.orgId}
        name={p.name}
        value={text}
        required={p.required}
        inputProps={attrs}
        onChange={onChange}
      />
    );
  } else {
    input = <input {...attrs} value={text} required={p.required} onChange={(e) => onChange(e.target.value)} />;
  }
  return (
    <div className="field">
      <label htmlFor={attrs.id}>
        {p.name}
        {p.required ? ' (required)' : ''}
      </label>
      {input}
      {hint && <span className="hint">{hint}</span>}
      <FieldError errors={errors} field={p.name} idPrefix="param" />
    </div>
  );
}

/** `who to greet · matching ^[a-z]+$ · default "world"` */
function paramHint(p: WorkflowParam): string {
  const parts: string[] = [];
  if (p.description) parts.push(p.description);
  if (p.type === 'file') parts.push('an active file of the organization');
  if (p.pattern) parts.push(`matching ${p.pattern}`);
  if (p.min !== undefined) parts.push(`at least ${p.min}`);
  if (p.max !== undefined) parts.push(`at most ${p.max}`);
  if (p.default !== undefined) parts.push(`default ${JSON.stringify(p.default)}`);
  return parts.join(' · ');
}
