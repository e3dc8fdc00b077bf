import { privateKeyFromBase64 } from '@drover/shared';
import { signedCall, StreamClient, type StreamClientOptions } from '@drover/agent';
import { DEPLOY_WORKFLOW } from './seed.js';

/**
 * The agents of the reconnect-storm benchmark (bench/reconnect-storm.ts), in a child process of
 * their own so that their signing and parsing stay off the measuring process: each one the
 * agent's own `StreamClient` (its backoff, its handling of the `retry` hint and of 503 with
 * `Retry-After`), reporting its workflows and labels before each attempt as the daemon does.
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
    const stream = new StreamClient({
      ...caller,
      logger: silent,
      onMessage: () => {},
      onState: (state, error) => {
        if (state === 'connected') send({ type: 'connected', index, at: Date.now() });
        else if (error?.includes('HTTP 503')) send({ type: 'shed' });
      },
      beforeConnect: async () => {
        await signedCall(caller, 'PUT', '/v1/agent/workflows', WORKFLOWS);
        await signedCall(caller, 'PUT', '/v1/agent/labels', LABELS);
      },
    });
    stream.start();
  });
  send({ type: 'ready' });
});
