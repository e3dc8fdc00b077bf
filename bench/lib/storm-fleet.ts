import { privateKeyFromBase64 } from '@drover/shared';
import {
  ReportClaims,
  reportDigest,
  signedCall,
  StreamClient,
  type ClaimableReport,
  type SignedCaller,
  type StreamClientOptions,
} from '@drover/agent';
import { DEPLOY_WORKFLOW } from './seed.js';

/**
 * The agents of the reconnect-storm benchmark (bench/reconnect-storm.ts), in a child process of
 * their own so that their signing and parsing stay off the measuring process: each one the
 * agent's own `StreamClient` (its backoff, its handling of the `retry` hint and of 503 with
 * `Retry-After`), reporting its workflows and labels before an attempt, or claiming them when the
 * coordinator holds them, as the daemon does (its ReportClaims).
 * Tells the parent, over IPC, of every agent that connects (`connected`, with its index and the
 * wall clock) and of every shed attempt (`shed`).
 */

export interface StormFleetStart {
  type: 'start';
  origin: string;
  agents: { agentId: string; privateKey: string }[];
}

export type StormFleetMessage = { type: 'connected'; index: number; at: number } | { type: 'shed' } | { type: 'ready' };

const silent = { info() {}, warn() {}, debug() {}, error() {} } as unknown as StreamClientOptions['logger'];
const WORKFLOWS = { workflows: [DEPLOY_WORKFLOW] };
const LABELS = { labels: { os: 'linux', arch: 'x64' } };

process.on('message', (message: StormFleetStart) => {
  if (message.type !== 'start') return;
  const send = (m: StormFleetMessage) => process.send!(m);
  message.agents.forEach((a, index) => {
    const caller = { origin: message.origin, agentId: a.agentId, privateKey: privateKeyFromBase64(a.privateKey) };
    const reports = new ReportClaims(
      fixedReport(caller, '/v1/agent/workflows', WORKFLOWS),
      fixedReport(caller, '/v1/agent/labels', LABELS),
    );
    const stream = new StreamClient({
      ...caller,
      logger: silent,
      onMessage: () => {},
      onState: (state, error) => {
        if (state === 'connected') send({ type: 'connected', index, at: Date.now() });
        else if (error?.includes('HTTP 503')) send({ type: 'shed' });
      },
      beforeConnect: () => reports.prepare(),
      onReportsChecked: (checks) => reports.checked(checks),
      onReportsOutdated: () => reports.outdated(),
    });
    stream.start();
  });
  send({ type: 'ready' });
});

/** A report whose body never changes, as an agent's labels and (between edits) its workflows. */
function fixedReport(caller: SignedCaller, path: string, body: unknown): ClaimableReport {
  let accepted: string | null = null;
  return {
    async report() {
      accepted = null;
      const answer = await signedCall(caller, 'PUT', path, body);
      if (answer.status !== 200) throw new Error(`${path}: HTTP ${answer.status}`);
      accepted = reportDigest(body);
    },
    claim: () => Promise.resolve(accepted),
  };
}
