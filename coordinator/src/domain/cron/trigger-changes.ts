import type { ClusterRelay } from '../model/cluster-relay.js';
import type { CronScheduler } from './scheduler.js';

/**
 * Keeps the cron scheduler's index in line with triggers changed on the other coordinators of
 * the database (the trigger service tells the relay of every change it makes, coordinator.ts):
 * each such change is read again here, and after a gap in their events every trigger is. An
 * occurrence is still fired once whichever schedulers see it (its claim, docs/schedules.md).
 * Returns the function that stops listening.
 */
export function relayTriggerChanges(relay: ClusterRelay, scheduler: Pick<CronScheduler, 'triggerChanged' | 'reload'>) {
  return relay.subscribe({
    event: (event) => {
      if (event.type === 'trigger_changed') void scheduler.triggerChanged(event.triggerId);
    },
    gap: () => void scheduler.reload(),
  });
}
