import type { PoolCandidate, PoolLoad } from '../model/trigger-runs.js';

/**
 * A pool's job goes to the least busy candidate (fewest open jobs handed to it), among those with
 * room in their queue; on a tie, the one with the most room left, then a random one, so that
 * calls arriving together spread over the pool instead of piling onto the first agent. Null when
 * every candidate's queue is full: the job waits in the pool (docs/fleets.md, "Pools").
 */
export function choosePoolAgent(loads: readonly PoolLoad[], random: () => number = Math.random): PoolCandidate | null {
  const free = loads.filter((l) => l.open < l.capacity);
  if (free.length === 0) return null;
  const least = Math.min(...free.map((l) => l.open));
  const idlest = free.filter((l) => l.open === least);
  const most = Math.max(...idlest.map((l) => l.capacity - l.open));
  const best = idlest.filter((l) => l.capacity - l.open === most);
  const { agentId, workflowId, capacity, params, timeoutMs } = best[Math.floor(random() * best.length)]!;
  return { agentId, workflowId, capacity, params, timeoutMs };
}
