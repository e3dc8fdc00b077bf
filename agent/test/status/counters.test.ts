import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { saveEnrollment, savePrivateKey } from '../../src/state/enrollment.js';
import { countersAsPrometheus, readCounters, zeroCounters } from '../../src/status/agent-counters.js';
import { CountersWriter } from '../../src/status/counters-writer.js';
import { runAgentCli as run } from '../cli/run-cli.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-counters-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe("the agent's counters", () => {
  it('say so when counters.json is damaged, before starting again from zero', () => {
    const file = path.join(root, 'counters.json');
    const damaged: string[] = [];
    const onDamaged = (f: string, reason: string) => void damaged.push(`${f}: ${reason}`);
    new CountersWriter(root, { delayMs: 0, onDamaged }).close(); // none yet: nothing to say
    expect(damaged).toEqual([]);
    fs.writeFileSync(file, '{"since": "2026-01-01T00:00:00.000Z", "jobsRun": 12');
    const writer = new CountersWriter(root, { delayMs: 0, onDamaged });
    expect(damaged).toEqual([`${file}: not JSON`]);
    expect(writer.current.jobsRun).toBe(0);
    writer.close();
  });

  it('say a failed write once per reason until a write succeeds, rather than at every count (a full disk)', async () => {
    const metrics = path.join(root, 'drover.prom');
    const errors: string[] = [];
    const writer = new CountersWriter(root, {
      delayMs: 0,
      metricsFile: metrics,
      onError: (error) => void errors.push((error as Error).message),
    });
    const count = async (times: number) => {
      for (let i = 0; i < times; i += 1) {
        writer.add('reconnects');
        await new Promise((resolve) => setTimeout(resolve, 5)); // the write it schedules
      }
    };
    fs.rmSync(metrics);
    fs.mkdirSync(metrics); // the file cannot be replaced now (EISDIR), as a full disk refuses it
    await count(5);
    // It said it at each of the 5 writes (one per reconnect attempt on a full disk).
    expect(errors).toEqual([expect.stringMatching(/^Cannot write .*drover\.prom: /)]);
    fs.rmdirSync(metrics);
    await count(1);
    expect(fs.readFileSync(metrics, 'utf8')).toContain('drover_agent_stream_reconnects_total 6');
    fs.rmSync(metrics);
    fs.mkdirSync(metrics);
    await count(2);
    expect(errors).toHaveLength(2); // failing again after a success: said again
    writer.close();
  });

  it('go on from what the previous run left in counters.json', () => {
    const first = new CountersWriter(root, { delayMs: 0 });
    const since = first.current.since;
    first.add('jobsRun', 2);
    first.add('jobsFailed');
    first.add('bytesDownloaded', 1234);
    first.close();
    first.add('jobsRun'); // after close: ignored
    expect(readCounters(root)).toEqual({ ...zeroCounters(since), jobsRun: 2, jobsFailed: 1, bytesDownloaded: 1234 });

    const second = new CountersWriter(root, { delayMs: 0 });
    second.add('jobsRun');
    second.add('reconnects');
    second.close();
    expect(readCounters(root)).toMatchObject({
      since,
      jobsRun: 3,
      jobsFailed: 1,
      reconnects: 1,
      bytesDownloaded: 1234,
    });
  });

  it('start over from zero when counters.json is damaged', () => {
    fs.writeFileSync(path.join(root, 'counters.json'), '{"since": "2026-01-01T00:00:00.000Z", "jobsRun": -3}');
    expect(readCounters(root)).toBeNull();
    const writer = new CountersWriter(root, { delayMs: 0 });
    writer.close();
    expect(readCounters(root)).toMatchObject({ jobsRun: 0 });
  });

  it('write the metrics file atomically, readable by node_exporter, and nothing else beside it', () => {
    const textfiles = path.join(root, 'textfile');
    fs.mkdirSync(textfiles);
    const file = path.join(textfiles, 'drover-agent.prom');
    const writer = new CountersWriter(root, { metricsFile: file, delayMs: 60_000 });
    writer.add('jobsRejected');
    writer.add('bytesUploaded', 10);
    writer.close();
    expect(fs.readdirSync(textfiles)).toEqual(['drover-agent.prom']);
    expect(fs.statSync(file).mode & 0o777).toBe(0o644);
    expect(fs.readFileSync(file, 'utf8')).toBe(countersAsPrometheus(writer.current));
    expect(fs.readFileSync(file, 'utf8')).toContain('drover_agent_jobs_rejected_total 1\n');
    expect(fs.readFileSync(file, 'utf8')).toContain('drover_agent_transfer_bytes_total{direction="upload"} 10\n');
  });

  it('are shown by `drover-agent status`, also as JSON', async () => {
    savePrivateKey(root, generateEd25519KeyPair().privateKey);
    saveEnrollment(root, {
      url: 'https://drover.example.com',
      agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
      orgId: '0b7d7c2e-1111-4222-8333-444455556666',
      serverPublicKey: generateEd25519KeyPair().publicKey,
      enrolledAt: '2026-01-02T03:04:05.000Z',
    });
    expect((await run('status', '--state-dir', root)).out).toMatch(/Counters: +none yet \(the agent has not run\)/);
    const writer = new CountersWriter(root, { delayMs: 0 });
    writer.add('jobsRun', 1234);
    writer.add('jobsFailed', 5);
    writer.add('jobsRejected', 2);
    writer.add('reconnects');
    writer.add('bytesDownloaded', 2_500_000);
    writer.add('bytesUploaded', 300);
    writer.close();
    const res = await run('status', '--state-dir', root);
    expect(res.out).toMatch(/Jobs: +1,234 run \(5 failed\), 2 rejected, since \d{4}-\d\d-\d\d/);
    expect(res.out).toMatch(/Stream: +1 reconnect\n/);
    expect(res.out).toMatch(/Files moved: +2\.5 MB downloaded, 300 B uploaded/);
    const json = JSON.parse((await run('status', '--state-dir', root, '--json')).out);
    expect(json.counters).toMatchObject({ jobsRun: 1234, jobsFailed: 5, jobsRejected: 2, reconnects: 1 });
  });

  it('refuses a --metrics-file in a directory that does not exist, or that is a directory, as run refuses a bad option', async () => {
    const missing = path.join(root, 'no', 'such', 'dir', 'agent.prom');
    for (const [value, message] of [
      [missing, `--metrics-file: the directory ${path.dirname(missing)} does not exist.`],
      [root, `--metrics-file expects a file path, got the directory ${root}.`],
    ] as const) {
      const res = await run('run', '--state-dir', root, '--metrics-file', value);
      expect(res.code).toBe(2);
      expect(res.err).toContain(`argument '${value}' is invalid. ${message}\n`);
    }
  });
});
