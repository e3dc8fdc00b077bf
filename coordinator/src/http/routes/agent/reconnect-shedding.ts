import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ReconnectBudget } from '../../../domain/agents/reconnect-budget.js';
import type { Metrics } from '../../../domain/metrics.js';
import { AppError } from '../../../errors.js';

/**
 * The reconnect budget at the door of the agent's connect-time routes (docs/operations.md,
 * "Reconnect storms"): an `onRequest` hook, so that a shed call costs no signature check, no body
 * and no database read. `take` (the stream) spends the budget; the others (the workflows and
 * labels reports an agent sends before it opens its stream) are refused only while it is spent.
 */
export function reconnectShedding(budget: ReconnectBudget, metrics: Metrics, take: boolean): onRequestHookHandler {
  return (_request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    let retryAfter: number | null;
    if (take) {
      const admission = budget.admit();
      retryAfter = admission.admitted ? null : admission.retryAfterSeconds;
    } else {
      retryAfter = budget.exhausted();
    }
    if (retryAfter === null) {
      done();
      return;
    }
    metrics.reconnectShed();
    done(
      new AppError(
        'reconnect_shed',
        `Too many agents are connecting at once: come back in ${retryAfter} s (Retry-After)`,
        { retryAfter },
      ),
    );
  };
}
