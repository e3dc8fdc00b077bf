import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { selectorCountQuery } from '../api/agent-pages';
import type { Occurrence, Trigger, TriggerType } from '../api/triggers';
import { BatchName } from './BatchName';
import { JobNumber } from './JobNumber';

/** How the trigger pages say a trigger's kind, workflow, schedule and occurrences. */

export const TYPE_WORDS: Record<TriggerType, string> = {
  webhook: 'webhook',
  cron: 'cron',
  slack: 'Slack',
  discord: 'Discord',
};

/** The kinds of trigger, in the order the pages offer them. */
export const TRIGGER_TYPES = Object.keys(TYPE_WORDS) as TriggerType[];

export const workflowWords = (t: Pick<Trigger, 'scopeType' | 'workflowName'>): string =>
  t.scopeType === 'workflow' ? (t.workflowName ?? '') : 'any workflow of the agent';

/** How a selector trigger's runs go to the agents it matches: `a batch: one job per agent, 5 at a time`. */
export const fanoutWords = (t: Pick<Trigger, 'fanout' | 'maxParallel'>): string =>
  t.fanout === 'one'
    ? 'one job, on one of them'
    : `a batch: one job per agent${t.maxParallel === null ? '' : `, ${t.maxParallel} at a time`}`;

/**
 * Where a trigger on a label selector runs, as the triggers list says it: its selector, its
 * fan-out and how many agents it matches now (when the coordinator has counted them).
 */
export function SelectorTarget({ orgId, trigger }: { orgId: string; trigger: Trigger }) {
  const count = useQuery(selectorCountQuery(orgId, trigger.agentSelector ?? '')).data ?? null;
  return (
    <>
      agents matching <code className="selector">{trigger.agentSelector}</code>
      <br />
      <span className="hint">
        {fanoutWords(trigger)}
        {count !== null && ` · ${count === 1 ? '1 matches' : `${count} match`} now`}
      </span>
    </>
  );
}

/**
 * How a run starts and answers: a cron trigger's schedule (`on 30 2 * * 1-5, Europe/Paris`), or how
 * a webhook or chat trigger's call is answered (`async`, `sync`).
 */
export const answerWords = (t: Pick<Trigger, 'type' | 'responseMode' | 'cronExpression' | 'cronTimezone'>): string =>
  t.type === 'cron' ? `on ${t.cronExpression ?? 'no schedule'}, ${t.cronTimezone ?? 'UTC'}` : t.responseMode;

/** `2026-11-26T01:30:00.000Z` → `2026-11-26 01:30 UTC` */
export const utcWords = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** `2026-11-26T02:30:00+01:00` in Europe/Paris → `2026-11-26 02:30 Europe/Paris (+01:00)` */
export const localWords = (localTime: string, zone: string): string =>
  `${localTime.slice(0, 10)} ${localTime.slice(11, 16)} ${zone} (${localTime.slice(19) || 'Z'})`;

export function ScheduledAt({ at, localTime, zone }: { at: string; localTime: string; zone: string }) {
  return (
    <>
      <time dateTime={at}>{utcWords(at)}</time>
      {zone !== 'UTC' && (
        <>
          <br />
          <span className="hint">{localWords(localTime, zone)}</span>
        </>
      )}
    </>
  );
}

/** A cron trigger's next run, in UTC and in its zone; or why there is none. */
export function NextRun({ trigger }: { trigger: Trigger }) {
  if (trigger.cronEnabled === false) return <span className="hint">paused</span>;
  const next = trigger.nextRuns[0];
  if (!next) return <span className="hint">never again</span>;
  return <ScheduledAt at={next.at} localTime={next.localTime} zone={trigger.cronTimezone ?? 'UTC'} />;
}

const REASON_WORDS: Record<NonNullable<Occurrence['reason']>, string> = {
  overlap: 'skipped: the previous run was still going',
  missed: 'skipped: missed while the coordinator was down',
  disabled: 'skipped: the trigger was paused',
};

/**
 * What an occurrence did: the job it made (with its status, linked), the batch it made (a trigger
 * on a selector with fan-out `all`: no job of its own, linked to the batch), or why it was skipped.
 */
export function OccurrenceOutcome({ occurrence }: { occurrence: Occurrence }) {
  if (occurrence.outcome === 'skipped') {
    return (
      <span className="status status-skipped">{occurrence.reason ? REASON_WORDS[occurrence.reason] : 'skipped'}</span>
    );
  }
  if (occurrence.batchId) {
    return (
      <Link to={`/api/batches/${occurrence.batchId}`}>
        <BatchName batchId={occurrence.batchId} />
      </Link>
    );
  }
  if (!occurrence.jobId) return <span className="hint">job gone</span>;
  return (
    <Link to={`/api/jobs/${occurrence.jobId}`}>
      job <JobNumber jobId={occurrence.jobId} />
      <span className={`status status-${occurrence.jobStatus ?? 'gone'}`}>{occurrence.jobStatus ?? 'gone'}</span>
    </Link>
  );
}
