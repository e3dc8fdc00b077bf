import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ReconnectBudget } from '../../../domain/agents/reconnect-budget.js';
import type { Metrics } from '../../../domain/metrics.js';
import { errorBody } from '../../../errors.js';

/**
 * The reconnect budget at the door of the agent's connect-time routes (docs/operations.md,
 * "Reconnect storms"): an `onRequest` hook, so that a shed call costs no signature check, no body
 * and no database read. `take` (the stream) spends the budget; the others (the workflows and
 * labels reports an agent sends before it opens its stream) are refused only while it is spent.
 * The refusal is the error model's body, answered from the hook without an error object, a stack
 * trace or a log line: thousands of them come together after a restart, each one expected (the
 * metric counts them), and as errors they held the coordinator's other requests up for a third of
 * a second (docs/performance.md, "Reconnect storm").
 */
export function reconnectShedding(budget: ReconnectBudget, metrics: Metrics, take: boolean): onRequestHookHandler {
  return (_request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
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
    const body = errorBody(
      'reconnect_shed',
      `Too many agents are connecting at once: come back in ${retryAfter} s (Retry-After)`,
    );
    void reply.code(body.statusCode).header('retry-after', String(retryAfter)).send(body);
  };
}
