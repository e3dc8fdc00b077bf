import { describe, expect, it } from 'vitest';
import { routeStreamMessage } from '../../src/daemon/route-message.js';
import type { JobManager } from '../../src/jobs/job-manager.js';
import { captureLogger } from '../log-capture.js';

describe('routeStreamMessage', () => {
  it('says, as an error a technician can act on, that another process took the stream with this identity', () => {
    const { logger, records } = captureLogger();
    const jobs = {} as JobManager; // a `replaced` event touches no job
    routeStreamMessage({ event: 'replaced', id: 'replaced-1', data: { by: '10.0.0.8' } }, jobs, logger);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ level: 50, by: '10.0.0.8' });
    expect(records[0]!.msg).toContain("another connection with this agent's identity (from 10.0.0.8) took its stream");
    expect(records[0]!.msg).toContain('drover-agent enroll --force');
  });
});
