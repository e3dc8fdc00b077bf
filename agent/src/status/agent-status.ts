import path from 'node:path';
import fs from 'node:fs';
import { keyFingerprint, publicKeyOf } from '@drover/shared';
import { AgentError } from '../errors.js';
import { loadEnrollment, loadPrivateKey, type Enrollment } from '../state/enrollment.js';
import { countWaitingReports } from '../outbox/outbox.js';
import { isPermissionError } from '../state/owner.js';
import { statePath } from '../state/paths.js';
import { describeProxyRoute, proxyRouteFor, readProxySettings } from '../http/proxy-env.js';
import { readDeployState, type AppDeployState } from '../deploy/deploy-state.js';
import { describeMarker, peekMarker } from '../self-update/marker.js';
import { readDaemonStatus, type DaemonStatus } from './daemon-status.js';
import { readCounters, type AgentCounters } from './agent-counters.js';

/** What `drover-agent status` shows: the state directory's enrollment, daemon, outbox and deployments. */
export interface AgentStatus {
  stateDir: string;
  enrollment: Enrollment | null;
  serverKeyFingerprint: string | null;
  agentKeyFingerprint: string | null;
  /** What is wrong with the local state, if anything. */
  problem: string | null;
  /**
   * The state file this user may not read (permission denied: the state directory of the service's
   * user, say), when that is why the enrollment is unknown; else null.
   */
  unreadable: string | null;
  /** True when `status.json` names a live process (the daemon, `drover-agent run`). */
  running: boolean;
  /** What the daemon last wrote in `status.json` (also when it is no longer running), or null. */
  daemon: DaemonStatus | null;
  /** Over-the-air deployments per application (`deploy/state.json`); null when there were none. */
  deployments: { applicationId: string; state: AppDeployState }[] | null;
  /** What is wrong with `deploy/state.json`, if anything (the daemon sets a damaged file aside). */
  deployProblem: string | null;
  /** Reports (job results, logs) kept in the outbox until the coordinator takes them. */
  waitingReports: number;
  /**
   * How this environment's proxy variables reach the coordinator (`http://user:***@proxy:3128
   * (from HTTPS_PROXY)`, `no proxy (NO_PROXY matches ...)`, `direct`), or why they cannot; null
   * when not enrolled. The running daemon's own is in `daemon.proxy`.
   */
  proxy: string | null;
  /** What the daemon did since its first start here (`counters.json`), or null before it ever ran. */
  counters: AgentCounters | null;
  /** A self-update in flight (`self-update.json`), in words; null when there is none. */
  selfUpdate: string | null;
}

/** What the state directory says about this agent. Never calls the coordinator. */
export function readAgentStatus(stateDir: string, env: NodeJS.ProcessEnv = process.env): AgentStatus {
  const status: AgentStatus = {
    stateDir,
    enrollment: null,
    serverKeyFingerprint: null,
    agentKeyFingerprint: null,
    problem: null,
    unreadable: null,
    running: false,
    daemon: null,
    deployments: null,
    deployProblem: null,
    waitingReports: countWaitingReports(path.join(stateDir, 'outbox')),
    counters: readCounters(stateDir),
    proxy: null,
    selfUpdate: null,
  };
  const deploy = readDeployState(stateDir);
  if (deploy?.apps) {
    status.deployments = [...deploy.apps].map(([applicationId, state]) => ({ applicationId, state }));
  } else if (deploy) status.deployProblem = deploy.problem;
  const daemon = readDaemonStatus(stateDir);
  status.daemon = daemon.status;
  status.running = daemon.running;
  status.selfUpdate = selfUpdateOf(stateDir, daemon.running);
  try {
    status.enrollment = loadEnrollment(stateDir);
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    status.problem = error.message;
    if (isPermissionError(error.cause)) status.unreadable = statePath(stateDir, 'enrollment');
    return status;
  }
  if (!status.enrollment) return status;
  status.serverKeyFingerprint = keyFingerprint(status.enrollment.serverPublicKey);
  status.proxy = proxyOf(status.enrollment.url, env);
  try {
    status.agentKeyFingerprint = keyFingerprint(publicKeyOf(loadPrivateKey(stateDir)));
    const mode = fs.statSync(statePath(stateDir, 'privateKey')).mode & 0o777;
    if (mode & 0o077)
      status.problem = `The agent key is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it`;
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    status.problem = error.message;
  }
  return status;
}

function selfUpdateOf(stateDir: string, daemonRunning: boolean): string | null {
  try {
    const read = peekMarker(stateDir);
    return read === null ? null : describeMarker(read, daemonRunning);
  } catch (error) {
    return `cannot read self-update.json: ${(error as Error).message}`;
  }
}

/** How the proxy variables of `env` reach `url`, in words. */
function proxyOf(url: string, env: NodeJS.ProcessEnv): string {
  try {
    const settings = readProxySettings(env);
    return describeProxyRoute(proxyRouteFor(settings, new URL(url)), settings);
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    return `none usable: ${error.message}`;
  }
}
