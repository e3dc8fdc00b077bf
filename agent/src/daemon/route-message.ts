import type { Logger } from 'pino';
import { isJobAssignment } from '../jobs/job-event.js';
import type { JobManager } from '../jobs/job-manager.js';
import type { StreamMessage } from '../stream/stream-client.js';

/** Hands a stream event (a job, an update, a cancel) to the job manager; pings only prove the stream is alive. */
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
  }
}
