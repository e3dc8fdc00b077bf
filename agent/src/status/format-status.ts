import { formatLabels, formatTime, shortId } from '@drover/shared';
import { describeRelease } from '../deploy/deploy-checks.js';
import { describeOffset, LARGE_OFFSET_MS } from '../http/server-clock.js';
import { describeInvalidFiles } from '../workflows/format-problem.js';
import type { AgentStatus } from './agent-status.js';
import type { DaemonStatus, LabelStatus } from './daemon-status.js';
import type { AgentCounters } from './agent-counters.js';
import { formatBytes } from '../files/format.js';

/** The status as lines for a person (`drover-agent status`). */
export function formatAgentStatus(status: AgentStatus): string[] {
  const lines: string[] = [];
  const e = status.enrollment;
  if (!e) {
    // "no" only when nothing is there: a file that cannot be read may well hold an enrollment.
    if (status.unreadable) lines.push(`Enrolled:      unknown (permission denied: ${status.unreadable})`);
    else if (status.problem) lines.push('Enrolled:      unknown (its files cannot be read: see the problem below)');
    else lines.push(`Enrolled:      no (nothing in ${status.stateDir})`);
    if (status.problem) lines.push(`Problem:       ${status.problem}`);
    else lines.push('               enroll with: drover-agent enroll --url <coordinator url> --token <drve_...>');
    return lines;
  }
  lines.push(
    'Enrolled:      yes',
    `Agent id:      ${e.agentId}`,
    `Organization:  ${e.orgId}`,
    `Coordinator:   ${e.url}`,
    ...formatProxy(status),
    `Server key:    ${status.serverKeyFingerprint}`,
    `Agent key:     ${status.agentKeyFingerprint ?? 'missing'}`,
    `Enrolled at:   ${e.enrolledAt}`,
    `State dir:     ${status.stateDir}`,
    ...formatDaemonStatus(status.daemon, status.running),
    ...(status.waitingReports > 0
      ? [`Outbox:        ${status.waitingReports} report(s) waiting for the coordinator (sent when it is reachable)`]
      : []),
    ...formatCounters(status.counters),
    ...formatDeployments(status),
    ...(status.selfUpdate ? [`Self-update:   ${status.selfUpdate}`] : []),
  );
  if (status.problem) lines.push(`Problem:       ${status.problem}`);
  return lines;
}

/**
 * How the coordinator is reached: as the running daemon said at its start, else as the proxy
 * variables of this environment say (the service's environment may differ).
 */
function formatProxy(status: AgentStatus): string[] {
  if (status.running && status.daemon?.proxy) return [`Proxy:         ${status.daemon.proxy}`];
  if (status.proxy === null) return [];
  return [`Proxy:         ${status.proxy} (by this environment's variables; the agent reads its own at start)`];
}

/** The daemon part of `drover-agent status`, aligned with the enrollment lines. */
export function formatDaemonStatus(status: DaemonStatus | null, running: boolean): string[] {
  if (!status) return ['Agent:         not running (start it with: drover-agent run)'];
  const when = (iso: string | null | undefined) => (iso ? formatTime(iso) : 'never');
  if (!running) {
    return [
      `Agent:         not running (its process, pid ${status.pid}, has ended; its last status was written ${when(status.updatedAt)})`,
    ];
  }
  const lines = [
    `Agent:         running (pid ${status.pid}, version ${status.version}, since ${when(status.startedAt)})`,
    `Connection:    ${status.connection}${status.connection === 'connected' ? '' : ` (last connected: ${when(status.lastConnectedAt)})`}`,
  ];
  if (status.lastError) lines.push(`Last error:    ${status.lastError}`);
  if (typeof status.clockOffsetMs === 'number') lines.push(`Clock:         ${describeClockLine(status.clockOffsetMs)}`);
  const q = status.queue;
  lines.push(
    `Queue:         ${q.running ? '1 running' : 'idle'}, ${q.waiting.length} waiting (capacity ${q.capacity})`,
  );
  if (q.running) {
    lines.push(
      `  running:     job ${shortId(q.running.jobId)} ${q.running.workflowName} (started ${when(q.running.startedAt)})`,
    );
  }
  for (const job of q.waiting) lines.push(`  waiting:     job ${shortId(job.jobId)} ${job.workflowName}`);
  const w = status.workflows;
  lines.push(`Workflows:     ${w.loaded} loaded${w.invalid.length ? `, ${describeInvalidFiles(w.invalid)}` : ''}`);
  for (const problem of w.invalid) {
    const text = problem.message.startsWith(`${problem.file}:`)
      ? problem.message
      : `${problem.file}: ${problem.message}`;
    lines.push(`  invalid:     ${text}`);
  }
  if (w.invalid.length) lines.push('               details: drover-agent workflows');
  if (status.labels) lines.push(...formatLabelStatus(status.labels));
  return lines;
}

/** The labels the agent reports, and what the coordinator made of them at the last connect. */
export function formatLabelStatus(labels: LabelStatus): string[] {
  const reported = formatLabels(labels.reported);
  switch (labels.state) {
    case 'pending':
      return [`Labels:        ${reported} (not taken by the coordinator yet)`];
    case 'unsupported':
      return [`Labels:        ${reported} (this coordinator does not take labels; upgrade it to use them)`];
    case 'refused':
      return [`Labels:        ${reported} (refused by the coordinator: ${labels.problem ?? 'no reason given'})`];
    case 'accepted': {
      const effective = labels.effective ? formatLabels(labels.effective) : reported;
      return effective === reported
        ? [`Labels:        ${reported}`]
        : [`Labels:        ${reported}`, `  coordinator: ${effective} (an operator's label wins a clash)`];
    }
  }
}

/** What the agent did since its first start (docs/metrics.md, "Agent counters"). */
export function formatCounters(c: AgentCounters | null): string[] {
  if (!c) return ['Counters:      none yet (the agent has not run)'];
  const n = (value: number) => value.toLocaleString('en-US');
  return [
    `Jobs:          ${n(c.jobsRun)} run (${n(c.jobsFailed)} failed), ${n(c.jobsRejected)} rejected, since ${formatTime(c.since)}`,
    `Stream:        ${n(c.reconnects)} reconnect${c.reconnects === 1 ? '' : 's'}`,
    `Files moved:   ${formatBytes(c.bytesDownloaded)} downloaded, ${formatBytes(c.bytesUploaded)} uploaded`,
  ];
}

function describeClockLine(offsetMs: number): string {
  if (Math.abs(offsetMs) < 1_000) return "agrees with the coordinator's";
  const note = Math.abs(offsetMs) >= LARGE_OFFSET_MS ? '; set it right (NTP)' : '';
  return `${describeOffset(offsetMs)} the coordinator's (signing with its time${note})`;
}

/** One line per application the agent deployed: what is installed, postponed, or last failed. */
function formatDeployments(status: AgentStatus): string[] {
  if (status.deployProblem) return [`Deployments:   ${status.deployProblem}`];
  if (!status.deployments || status.deployments.length === 0) return ['Deployments:   none yet'];
  const lines = [`Deployments:   ${status.deployments.length} application(s)`];
  for (const { applicationId, state } of status.deployments) {
    const parts = [state.current ? `installed ${describeRelease(state.current)}` : 'nothing installed by this agent'];
    if (state.postponed) parts.push(`postponed ${state.postponed.version} (local policy)`);
    if (state.lastFailure) {
      const { state: outcome, releaseId, at, error } = state.lastFailure;
      parts.push(`last ${outcome}: release ${releaseId} at ${at}: ${error}`);
    }
    lines.push(`  ${applicationId}: ${parts.join('; ')}`);
  }
  return lines;
}
