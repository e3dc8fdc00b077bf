import type {
  BindingEvaluation,
  BindingEvaluationFacts,
  DeviceBinding,
  ReportWrite,
} from '../model/device-bindings.js';
import type { Job } from '../model/jobs.js';
import { isoAt } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import { deployParams, releaseOfDeployParams } from './deploy-job.js';
import { forceReasonText } from './desired-state.js';
import { planEvaluation, type ActiveJobFacts } from './evaluation.js';

/**
 * One evaluation of a device binding as the writes it makes (docs/ota.md, "Evaluation"): the
 * report's observations, the plan (evaluation.ts), the update job it issues and the binding's
 * new fields. The device-binding repository runs it between its reads and its writes, inside
 * one transaction, so two evaluations never issue two jobs for a binding.
 */
export function evaluateBinding(f: BindingEvaluationFacts): BindingEvaluation {
  const binding = withReport(f.binding, f.request.report);
  const plan = planEvaluation({
    binding: {
      channel: binding.channel,
      current: binding.current,
      activeJobId: binding.activeJobId,
      failedAttempts: binding.failedAttempts,
      retryAt: msOrNull(binding.retryAt),
      postponedReleaseId: binding.postponedReleaseId,
      cancelledJobId: binding.cancelledJobId,
      windowOpensAt: msOrNull(binding.windowOpensAt),
      windowClosesAt: msOrNull(binding.windowClosesAt),
    },
    releases: f.releases,
    withheld: f.withheld,
    activeJob: f.activeJob && activeJobFacts(f.activeJob),
    updateWorkflowName: f.app.updateWorkflowName,
    maintenanceWindow: f.app.maintenanceWindow,
    agentRevoked: f.agentStatus === 'revoked',
    reason: f.request.reason,
    reportedState: f.request.report?.state,
    now: f.now,
  });
  const at = isoAt(f.now);
  const release = plan.issue;
  const issue = release
    ? {
        releaseId: release.id,
        job: {
          id: newTimeOrderedId(f.now),
          orgId: f.app.orgId,
          kind: 'update' as const,
          source: 'ota' as const,
          triggerId: null,
          agentId: binding.agentId,
          workflowId: null,
          workflowName: f.app.updateWorkflowName,
          status: 'pending' as const,
          ref: null,
          debug: false,
          params: { ...deployParams(release, plan.state.forced) },
          errorMessage: null,
          forced: plan.state.forced,
          forceReason: forceReasonText(plan.state),
          apiTokenId: null,
          userId: null,
          createdAt: at,
        },
      }
    : null;
  return {
    supersede: plan.supersede && { ...plan.supersede, at },
    issue,
    binding: {
      ...binding,
      current: plan.binding.current,
      failedAttempts: plan.binding.failedAttempts,
      retryAt: isoOrNull(plan.binding.retryAt),
      postponedReleaseId: plan.binding.postponedReleaseId,
      cancelledJobId: plan.binding.cancelledJobId,
      windowOpensAt: isoOrNull(plan.binding.windowOpensAt),
      windowClosesAt: isoOrNull(plan.binding.windowClosesAt),
      activeJobId: issue?.job.id ?? plan.binding.activeJobId,
      desiredReleaseId: plan.state.desired?.id ?? null,
      forced: plan.state.forced,
    },
    state: plan.state,
    settled: plan.settled,
    repushJobId: plan.repush,
    hold: plan.hold,
  };
}

const msOrNull = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoAt(ms));

/** The binding with a report's observations applied. */
function withReport(binding: DeviceBinding, report: ReportWrite | undefined): DeviceBinding {
  if (!report) return binding;
  const next = { ...binding, lastReportAt: report.at };
  if (report.current !== undefined) next.current = report.current;
  if (report.state !== undefined) {
    next.state = report.state;
    next.error = report.error ?? null;
  } else if (report.error !== undefined) next.error = report.error;
  return next;
}

/** The active update job as the plan sees it: the release it installs, from its params. */
function activeJobFacts(job: Job): ActiveJobFacts {
  const release = releaseOfDeployParams(job.params) ?? { id: '', version: '', sequence: 0, forced: false };
  return {
    id: job.id,
    status: job.status,
    cancelRequested: job.cancelRequestedAt !== null,
    errorMessage: job.errorMessage,
    release: { id: release.id, version: release.version, sequence: release.sequence },
    forced: release.forced,
    workflowName: job.workflowName,
  };
}
