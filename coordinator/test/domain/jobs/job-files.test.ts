import { describe, expect, it, vi } from 'vitest';
import type { JobAssignment } from '@drover/shared';
import type { AgentRepository } from '../../../src/domain/model/agents.js';
import type { StoredFile } from '../../../src/domain/model/files.js';
import type { Job, JobRepository } from '../../../src/domain/model/jobs.js';
import { AgentEvents } from '../../../src/domain/agents/agent-events.js';
import { JobEvents } from '../../../src/domain/jobs/job-events.js';
import { StreamRegistry } from '../../../src/domain/agents/stream-registry.js';
import type { AgentFileDownload } from '../../../src/domain/files/file-service.js';
import { inputFileIds, withFreshDownloadUrls } from '../../../src/domain/jobs/job-input-files.js';
import { checkOutputFileRefs } from '../../../src/domain/jobs/job-output-files.js';

const A = '11111111-1111-4111-8111-111111111111';
const B = '22222222-2222-4222-8222-222222222222';
const C = '33333333-3333-4333-8333-333333333333';

const assignment = (params: Record<string, unknown>): JobAssignment => ({
  jobId: 'job',
  kind: 'trigger',
  workflowName: 'wf',
  params,
  ref: null,
  debug: false,
  timeoutMs: null,
  status: 'pending',
  createdAt: '2026-01-01T00:00:00.000Z',
});

const download = (id: string): AgentFileDownload => ({
  downloadUrl: `https://drover.test/v1/storage/blobs/${id}?m=GET`,
  expiresInSeconds: 900,
  size: 3,
  sha256: 'a'.repeat(64),
  filename: 'in.txt',
  contentType: 'text/plain',
});

describe('withFreshDownloadUrls', () => {
  it('completes each top-level FileRef with a URL and what to verify, leaving other params alone', async () => {
    const asked: string[][] = [];
    const files = {
      async agentDownloads(_orgId: string, ids: readonly string[]) {
        asked.push([...ids]);
        return new Map([[A, download(A)]]);
      },
    };
    const nested = { list: [{ __type: 'FileRef', id: C }] };
    const sent = await withFreshDownloadUrls(
      files,
      'org',
      assignment({ bundle: { __type: 'FileRef', id: A }, gone: { __type: 'FileRef', id: B }, nested, n: 1 }),
    );
    expect(asked).toEqual([[A, B]]);
    expect(sent.params).toEqual({
      bundle: { __type: 'FileRef', id: A, ...download(A) },
      gone: { __type: 'FileRef', id: B },
      nested,
      n: 1,
    });
  });

  it('asks nothing and returns the same assignment when there is no input file', async () => {
    const files = {
      agentDownloads: () => Promise.reject(new Error('must not be called')),
    };
    const plain = assignment({ a: 'b' });
    expect(await withFreshDownloadUrls(files, 'org', plain)).toBe(plain);
    expect(inputFileIds({ a: { __type: 'FileRef', id: 7 }, b: [{ __type: 'FileRef', id: A }] })).toEqual([]);
  });
});

describe('checkOutputFileRefs', () => {
  const stored = (id: string, jobId: string) => ({ id, jobId, status: 'active' }) as StoredFile;
  const files = { findActiveManyInOrg: async () => [stored(A, 'job'), stored(B, 'other-job')] };

  it('keeps FileRefs of active files of this job, in place, and drops the others saying why', async () => {
    const result = await checkOutputFileRefs(files, 'org', 'job', {
      first: 'x',
      mine: { __type: 'FileRef', id: A, downloadUrl: 'https://x' },
      theirs: { __type: 'FileRef', id: B },
      unknown: { __type: 'FileRef', id: C },
      broken: { __type: 'FileRef', id: '../x' },
      last: 'y',
    });
    expect(result.output).toEqual({ first: 'x', mine: { __type: 'FileRef', id: A }, last: 'y' });
    expect(Object.keys(result.output)).toEqual(['first', 'mine', 'last']);
    expect(result.dropped).toEqual([
      { key: 'theirs', fileId: B, reason: 'the file is not an output of this job' },
      { key: 'unknown', fileId: C, reason: 'no active file of the organization has this id' },
      { key: 'broken', fileId: null, reason: 'its id is not a file id' },
    ]);
  });

  it('returns an output without FileRefs as it is', async () => {
    const output = { a: '1', nested: { inner: { __type: 'FileRef', id: A } } };
    const result = await checkOutputFileRefs(
      { findActiveManyInOrg: () => Promise.reject(new Error('no')) },
      'org',
      'job',
      output,
    );
    expect(result).toEqual({ output, dropped: [] });
  });
});

describe('the stream with prepareAssignment', () => {
  function registryWith(jobs: Map<string, Job>, prepare: (job: Job, a: JobAssignment) => Promise<JobAssignment>) {
    const agents = {
      markConnected: async () => true,
      touch: async () => {},
      markDisconnected: async () => true,
      listConnectedIds: async () => [],
    } as unknown as AgentRepository;
    const repo = {
      listOpenForAgent: async () => ({ jobs: [], damaged: [] }),
      listUnconfirmedCancels: async () => [],
      findByIds: async (ids: readonly string[]) => ({ jobs: ids.flatMap((id) => jobs.get(id) ?? []), damaged: [] }),
    } as unknown as JobRepository;
    const jobEvents = new JobEvents();
    const errors: string[] = [];
    const registry = new StreamRegistry({
      agents,
      jobs: repo,
      clock: { now: () => Date.now() },
      jobEvents,
      agentEvents: new AgentEvents(),
      logger: { info: () => {}, warn: () => {}, error: (_o, msg) => void errors.push(msg) },
      pingMs: 60_000,
      disconnectGraceMs: 1000,
      prepareAssignment: prepare,
    });
    registry.start();
    const chunks: string[] = [];
    const sink = { write: (c: string) => (chunks.push(c), true), end: () => {}, onClose: () => {} };
    return { registry, jobEvents, chunks, errors, sink };
  }

  const openJob = (id: string, params: Record<string, unknown>) =>
    ({ id, orgId: 'o', agentId: 'a1', kind: 'trigger', workflowName: 'wf', status: 'pending', params }) as Job;
  const sent = (chunks: string[]) =>
    chunks.filter((c) => c.startsWith('event: job')).map((c) => JSON.parse(/\ndata: (.*)\n/.exec(c)![1]!));

  it('keeps live jobs in creation order when preparing one takes longer, and sends a job as stored when it fails', async () => {
    const jobs = new Map([
      ['slow', openJob('slow', { f: { __type: 'FileRef', id: A } })],
      ['fast', openJob('fast', {})],
      ['broken', openJob('broken', { f: { __type: 'FileRef', id: B } })],
    ]);
    // Preparing `slow` lasts until the test lets it go, after the other two were announced.
    const { promise: slowDone, resolve: release } = Promise.withResolvers<void>();
    const preparing: string[] = [];
    const s = registryWith(jobs, async (job, a) => {
      preparing.push(job.id);
      if (job.id === 'slow') await slowDone;
      if (job.id === 'broken') throw new Error('database busy');
      return { ...a, params: { ...a.params, prepared: true } };
    });
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, s.sink);
    for (const id of ['slow', 'fast', 'broken']) s.jobEvents.jobCreated('a1', id);
    await vi.waitFor(() => expect(preparing).toEqual(['slow']));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(sent(s.chunks)).toEqual([]);
    expect(preparing).toEqual(['slow']);
    release();
    await vi.waitFor(() => expect(sent(s.chunks)).toHaveLength(3));
    s.registry.close();
    const events = sent(s.chunks);
    expect(events.map((e) => e.jobId)).toEqual(['slow', 'fast', 'broken']);
    expect(events[0].params.prepared).toBe(true);
    expect(events[2].params).toEqual({ f: { __type: 'FileRef', id: B } });
    expect(s.errors).toEqual(['could not prepare the download URLs of a job; sending it without them']);
  });
});
