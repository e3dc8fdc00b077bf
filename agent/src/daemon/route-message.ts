import type { Logger } from 'pino';
import { isJobAssignment } from '../jobs/job-event.js';
import type { JobManager } from '../jobs/job-manager.js';
import type { StreamMessage } from '../stream/stream-client.js';

/**
 * Hands a stream event (a job, an update, a cancel) to the job manager; pings only prove the stream
 * is alive; `replaced` says another process has this agent's identity.
 */
export function routeStreamMessage(message: StreamMessage, jobs: JobManager, logger: Logger): void {
  switch (message.event) {
    case 'job':
      if (!isJobAssignment(message.data)) {
        logger.warn({ id: message.id }, 'ignored a job event whose data is not a job assignment');
        return;
      }
      jobs.onJobEvent(message.data);
      return;
    case 'deploy':
      jobs.onDeployEvent(message.data);
      return;
    case 'cancel':
      jobs.onCancelEvent(message.data);
      return;
    case 'ping':
      logger.trace({ id: message.id }, 'ping');
      return;
    case 'replaced': {
      // The stream this agent reads was taken by another connection with its identity: not one
      // of its own (it opens one at a time), so another machine or process has this state.
      const by = (message.data as { by?: unknown } | null)?.by;
      logger.error(
        { by: typeof by === 'string' ? by : null },
        `another connection with this agent's identity${typeof by === 'string' ? ` (from ${by})` : ''} took its ` +
          'stream: two machines (or two agents on this one) use the same state directory or a copy of it. Jobs go ' +
          'to one or the other. Keep one: on the other, stop the agent and enroll it again with a new token ' +
          "(`drover-agent enroll --force`, as the agent's user: `sudo -u drover-agent ...` under the package)",
      );
      return;
    }
  }
}
