import { useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { ApiError, type ErrorDetail } from '../api/client';
import type { App, DeviceCount, Release } from '../api/ota';
import { publishImpact } from '../api/ota-impact';
import { publishRelease, rolloutKey, type RolloutPlan } from '../api/rollouts';
import { Confirm } from '../components/Confirm';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
import {
  CANARY,
  CANARY_FIELDS,
  parseWaves,
  PLAN_CHOICES,
  planOf,
  planWords,
  previewOf,
  waveSizes,
  type PlanChoice,
  type PlanFields,
  type SoakUnit,
} from '../components/rollout-plan';

const FIELDS = ['waves', 'soakSeconds', 'maxFailureRate', 'minAttempts'] as const;
const PREFIX = 'plan';

/**
 * Publishing a draft: what it will do to the devices, and how (docs/ota.md, "Staged rollouts"):
 * all at once as before, the canary plan, or a custom plan whose refusals (422) are shown at their
 * fields; the plan's waves previewed for the devices on the channel now.
 */
export function PublishDialog(props: {
  orgId: string;
  app: App;
  releases: Release[];
  /** The application's devices, counted. */
  devices: DeviceCount[];
  release: Release;
  onClose(): void;
}) {
  const { orgId, app, releases, devices, release: r, onClose } = props;
  const [choice, setChoice] = useState<PlanChoice>('now');
  const [fields, setFields] = useState<PlanFields>(CANARY_FIELDS);
  const queryClient = useQueryClient();
  const publish = useMutation({
    mutationFn: () => {
      const plan = planFor(choice, fields);
      if ('problems' in plan) {
        throw new ApiError(422, 'validation_failed', 'The rollout plan needs numbers in its fields', plan.problems);
      }
      return publishRelease(orgId, app.id, r.id, plan.plan);
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: rolloutKey(orgId, app.id, r.id) });
      onClose();
    },
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'apps', app.id] });
      void queryClient.invalidateQueries({ queryKey: ['orgs', orgId, 'files'] });
    },
  });
  const errors = fieldErrors(placed(publish.error), FIELDS, 'body.rollout', PREFIX);
  const onChannel = devices.reduce((sum, g) => sum + (g.channel === r.channel ? g.devices : 0), 0);
  const impact = publishImpact(releases, devices, r);
  const plan = choice === 'now' ? null : planFor(choice, fields);
  const waves = choice === 'canary' ? CANARY.waves : parseWaves(fields.waves);
  const preview = choice !== 'now' && waves ? previewOf(waves, onChannel, r.channel) : null;
  const set = (field: keyof PlanFields) => (e: { target: { value: string } }) =>
    setFields((f) => ({ ...f, [field]: e.target.value }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    publish.mutate();
  };
  const verb = `Publish ${r.version}`;
  return (
    <Confirm
      role="group"
      label={verb}
      className="confirm publish-dialog"
      onSubmit={submit}
      onCancel={onClose}
      noValidate
    >
      {choice === 'now' || impact.devices === 0
        ? impact.lines.map((line) => <p key={line}>{line}</p>)
        : // A plan the coordinator will refuse (its waves) gets its words at the fields, not an impact.
          preview && plan && 'plan' in plan && plan.plan && <p>{planImpact(plan.plan, onChannel, r)}</p>}
      <fieldset className="plan-choices">
        <legend>Rollout plan</legend>
        {PLAN_CHOICES.map((c) => (
          <label key={c.value} className="check">
            <input
              type="radio"
              name={`plan-${r.id}`}
              value={c.value}
              checked={choice === c.value}
              onChange={() => {
                setChoice(c.value);
                publish.reset();
              }}
            />
            <span>
              {c.label} <span className="hint">{c.hint}</span>
            </span>
          </label>
        ))}
      </fieldset>
      {choice === 'custom' && (
        <div className="form-grid plan-fields">
          <div className="field">
            <label htmlFor={errors.props('waves').id}>Waves (%)</label>
            <input {...errors.props('waves')} value={fields.waves} onChange={set('waves')} inputMode="decimal" />
            <span className="hint">increasing percentages of the channel&apos;s devices, the last 100</span>
            <FieldError errors={errors} field="waves" idPrefix={PREFIX} />
          </div>
          <div className="field">
            <label htmlFor={errors.props('soakSeconds').id}>Soak ({fields.soakUnit})</label>
            <span className="soak">
              <input {...errors.props('soakSeconds')} value={fields.soak} onChange={set('soak')} inputMode="decimal" />
              <select
                aria-label="Unit of the soak"
                value={fields.soakUnit}
                onChange={(e) => setFields((f) => ({ ...f, soakUnit: e.target.value as SoakUnit }))}
              >
                <option value="minutes">minutes</option>
                <option value="seconds">seconds</option>
              </select>
            </span>
            <span className="hint">the wait after a wave&apos;s last update ended, before the next wave</span>
            <FieldError errors={errors} field="soakSeconds" idPrefix={PREFIX} />
          </div>
          <div className="field">
            <label htmlFor={errors.props('maxFailureRate').id}>Max failure rate (%)</label>
            <input
              {...errors.props('maxFailureRate')}
              value={fields.maxFailureRate}
              onChange={set('maxFailureRate')}
              inputMode="decimal"
            />
            <span className="hint">the rollout pauses by itself when more of a wave&apos;s updates fail</span>
            <FieldError errors={errors} field="maxFailureRate" idPrefix={PREFIX} />
          </div>
          <div className="field">
            <label htmlFor={errors.props('minAttempts').id}>Min attempts</label>
            <input
              {...errors.props('minAttempts')}
              value={fields.minAttempts}
              onChange={set('minAttempts')}
              inputMode="numeric"
            />
            <span className="hint">updates of a wave that must have ended before its failure rate is judged</span>
            <FieldError errors={errors} field="minAttempts" idPrefix={PREFIX} />
          </div>
        </div>
      )}
      {preview && (
        <p className="hint plan-preview" aria-live="polite">
          {preview}
        </p>
      )}
      <FormError error={publish.error} errors={errors} />
      <button type="submit" disabled={publish.isPending}>
        {verb}
      </button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
    </Confirm>
  );
}

function planFor(choice: PlanChoice, fields: PlanFields): { plan: RolloutPlan | null } | { problems: ErrorDetail[] } {
  if (choice === 'now') return { plan: null };
  if (choice === 'canary') return { plan: CANARY };
  return planOf(fields);
}

/** What publishing with a plan does first: `Wave 1 holds 1 of the 4 devices on channel stable: ...`. */
function planImpact(plan: RolloutPlan, devices: number, r: Release): string {
  const how = `(${planWords(plan)})`;
  if (devices === 0) {
    return `No device is on channel ${r.channel} now: devices bound later get ${r.version} once the rollout completes ${how}.`;
  }
  const [first = 0] = waveSizes(plan.waves, devices);
  const of = devices === 1 ? 'the 1 device' : `the ${devices} devices`;
  const told = first === 1 ? 'it is told' : 'they are told';
  return `Wave 1 holds ${first} of ${of} on channel ${r.channel}: ${told} to update to ${r.version} first, the others wave by wave ${how}.`;
}

/**
 * The API's 422 with each detail where the reader looks: a wave's problem says which wave
 * (`body.rollout.waves.1`: "wave 2: ..."), and the fields typed in other units than the API's say
 * how they were sent.
 */
function placed(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.details.length === 0) return error;
  const details = error.details.map((d) => {
    const wave = /^body\.rollout\.waves\.(\d+)$/.exec(d.path);
    if (wave) return { ...d, message: `wave ${Number(wave[1]) + 1}: ${d.message}` };
    if (d.path === 'body.rollout.maxFailureRate' && /^expected a rate/.test(d.message)) {
      return { ...d, message: `${d.message} (the rate is this field ÷ 100: 0 to 100 %)` };
    }
    if (d.path === 'body.rollout.soakSeconds' && /seconds/.test(d.message)) {
      return { ...d, message: `${d.message} (the soak is sent in seconds)` };
    }
    return d;
  });
  return new ApiError(error.statusCode, error.code, error.message, details, error.retryAfter);
}
