import type { Agent } from '../api/types';

/** An agent's status as the pages say it. */
export const STATUS_WORDS: Record<Agent['status'], string> = {
  pending: 'enrolled, never connected',
  connected: 'connected',
  disconnected: 'disconnected',
  revoked: 'revoked',
};
