import type { Agent } from '../api/types';

/** An agent's status as the pages say it. */
export const STATUS_WORDS: Record<Agent['status'], string> = {
  pending: 'enrolled, never connected',
  connected: 'connected',
  disconnected: 'disconnected',
  revoked: 'revoked',
};

/** The statuses in the order the pages list them (the Agents page's filter, the home page's counts). */
export const AGENT_STATUSES: Agent['status'][] = ['connected', 'disconnected', 'pending', 'revoked'];
