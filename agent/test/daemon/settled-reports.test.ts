import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { markSettledInJournal } from '../../src/daemon/daemon.js';
import { Journal } from '../../src/jobs/journal.js';
import { Outbox } from '../../src/outbox/outbox.js';
import { ReportSender } from '../../src/outbox/report-sender.js';
import type { Report } from '../../src/outbox/report.js';
import { assignment } from '../jobs/harness.js';
import { captureLogger } from '../log-capture.js';

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-settled-'));
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

describe("the daemon's note that the coordinator took a result", () => {
  it('is logged, not thrown, when the journal cannot be written (a full disk): the agent goes on', async () => {
    const journal = Journal.open(stateDir);
    const job = assignment('w');
    journal.create(job, 'finished');
    const { logger, records } = captureLogger();
    const sender = new ReportSender({
      outbox: Outbox.open(path.join(stateDir, 'outbox')),
      transport: async (report) => ({ status: 200, body: { jobId: report.jobId, status: 'success' } }),
      logger,
      onSettled: markSettledInJournal(journal, logger),
    });
    const full = vi.spyOn(fs, 'writeFileSync').mockImplementation(() => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      const report: Report = {
        kind: 'finish',
        jobId: job.jobId,
        body: { status: 'success', exitCode: 0, errorMessage: null, output: {} },
      };
      // Before, the write's error rejected the send: an unhandled rejection that crashed the agent.
      await expect(sender.send(report)).resolves.toMatchObject({ outcome: 'delivered' });
    } finally {
      full.mockRestore();
      sender.close();
    }
    expect(records.filter((r) => r.level >= 50).map((r) => r.msg)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^cannot note in the journal that the coordinator took the finish of job ${job.jobId} \\(.*: no space left on the device \\(ENOSPC; .*\\); the agent goes on`,
        ),
      ),
    ]);
  });
});
