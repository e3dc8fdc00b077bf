import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { Journal } from '../../src/jobs/journal.js';
import { jobFiles } from '../../src/exec/job-files.js';
import { saveEnrollment, savePrivateKey } from '../../src/state/enrollment.js';
import { assignment } from '../jobs/harness.js';
import { captureLogger } from '../log-capture.js';

const HOUR_MS = 3_600_000;

let stateDir: string;
let daemon: Daemon | null = null;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-retention-'));
  savePrivateKey(stateDir, generateEd25519KeyPair().privateKey);
  saveEnrollment(stateDir, {
    url: 'http://127.0.0.1:1', // nothing listens: the daemon runs without its coordinator
    agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
    orgId: '0b7d7c2e-1111-4222-8333-444455556666',
    serverPublicKey: generateEd25519KeyPair().publicKey,
    enrolledAt: '2026-01-02T03:04:05.000Z',
  });
});
afterEach(async () => {
  vi.useRealTimers();
  await daemon?.stop();
  daemon = null;
  fs.rmSync(stateDir, { recursive: true, force: true });
});

describe('the job directories of a daemon that runs for weeks', () => {
  it('are removed once the retention passed, without a restart', async () => {
    const journal = Journal.open(stateDir);
    const { jobId } = journal.create(assignment('w'), 'finished', { finalDelivered: true });
    const dir = jobFiles(stateDir, jobId).dir;
    expect(fs.existsSync(dir)).toBe(true);
    const { logger, records } = captureLogger();
    daemon = await startDaemon({ stateDir, logger, jobRetentionMs: HOUR_MS, pruneIntervalMs: 20 });
    expect(fs.existsSync(dir)).toBe(true); // settled a moment ago: kept

    // Two hours later, the daemon still running: before, only its next start removed the directory.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * HOUR_MS);
    await vi.waitFor(() => expect(fs.existsSync(dir)).toBe(false), { timeout: 5_000, interval: 20 });
    expect(records.map((r) => r.msg)).toContain(
      'removed 1 job directory settled, or left without a readable journal, more than 1h ago',
    );
  });
});
