import { beforeEach, describe, expect, it } from 'vitest';
import type { Application } from '../../../src/domain/model/applications.js';
import type { BindResult } from '../../../src/domain/model/device-bindings.js';
import type { DeviceGroupChange, DeviceGroupPassInput } from '../../../src/domain/model/device-groups.js';
import type { StoredFile } from '../../../src/domain/model/files.js';
import type { NewRelease } from '../../../src/domain/model/releases.js';
import { SUPERSEDED_MESSAGE, WINDOW_CLOSED_MESSAGE } from '../../../src/domain/ota/evaluation.js';
import { newId } from '../../../src/util/ids.js';
import { DamagedColumnError } from '../../../src/util/json.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll, insertJob, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const databases = databasesOfThisFile();

describe.each(DATABASES)('applications, releases and device bindings (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;
  let bindingId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, iso(0)));
    bindingId = newId();
    await t.repos.storageBindings.insert({
      id: bindingId,
      orgId,
      name: 'local',
      backend: 'local',
      config: {},
      isDefault: true,
      createdAt: iso(0),
    });
  });

  const app = (fields: Partial<Application> = {}): Application => ({
    id: newId(),
    orgId,
    slug: 'firmware',
    updateWorkflowName: 'update',
    defaultChannel: 'stable',
    notify: null,
    deviceSelector: null,
    maintenanceWindow: null,
    releaseKeys: null,
    releaseKeyRotations: [],
    createdAt: iso(0),
    deletedAt: null,
    ...fields,
  });
  const artifact = async (fields: Partial<StoredFile> = {}) => {
    const id = newId();
    await t.repos.files.insert({
      id,
      orgId,
      bindingId,
      filename: 'fw.bin',
      contentType: 'application/octet-stream',
      size: 1234,
      sha256: 'c'.repeat(64),
      declaredSize: null,
      declaredSha256: null,
      status: 'active',
      cleanupRule: 'persistent',
      ttlSeconds: null,
      expiresAt: null,
      deletedAt: null,
      createdAt: iso(0),
      completedAt: iso(0),
      uploadExpiresAt: iso(900_000),
      blobKey: `${id.slice(0, 2)}/${id}`,
      origin: 'api',
      createdByTokenId: null,
      createdByUserId: null,
      jobId: null,
      deleteAttempts: 0,
      nextDeleteAt: null,
      lastDeleteError: null,
      ...fields,
    });
    return id;
  };
  /** Binds the agents to the application on `stable`; gives the bindings' ids, in the agents' order. */
  const bindAll = async (applicationId: string, agentIds: readonly string[], at: string) => {
    const bound = await t.repos.deviceBindings.bind({
      orgId,
      applicationId,
      bindings: agentIds.map((id) => ({ id: newId(), agentId: id })),
      channel: 'stable',
      at,
    });
    expect(bound.outcome).toBe('bound');
    return bound.outcome === 'bound' ? bound.bindings.map((b) => b.id) : [];
  };
  const release = (applicationId: string, artifactFileId: string, fields: Partial<NewRelease> = {}): NewRelease => ({
    id: newId(),
    orgId,
    applicationId,
    version: '1.0.0',
    channel: 'stable',
    updatePolicy: 'optional',
    artifactFileId,
    sequence: null,
    signature: null,
    notes: null,
    createdAt: iso(1),
    ...fields,
  });

  it('takes a slug once among the applications not deleted, and frees it when one is deleted', async () => {
    const first = app();
    const outcomes = await Promise.all([t.repos.applications.insert(first), t.other.applications.insert(app())]);
    expect(outcomes.sort()).toEqual(['created', 'duplicate_slug']);
    const stored = (await t.repos.applications.listByOrg(orgId))[0]!;
    expect(await t.repos.applications.findById(stored.id)).toEqual(stored);
    expect(await t.repos.applications.update(orgId, stored.id, { defaultChannel: 'beta' })).toEqual({
      outcome: 'updated',
      app: { ...stored, defaultChannel: 'beta' },
    });
    expect(await t.repos.applications.update(newId(), stored.id, { defaultChannel: 'x' })).toBeNull();
    const deleted = await t.repos.applications.delete(orgId, stored.id, iso(9), 'The application was deleted');
    expect(deleted).toEqual({ app: { ...stored, defaultChannel: 'beta', deletedAt: iso(9) }, cancelledJobIds: [] });
    expect(await t.repos.applications.delete(orgId, stored.id, iso(9), 'again')).toBeNull();
    expect(await t.repos.applications.findInOrg(orgId, stored.id)).toBeNull();
    expect(await t.repos.applications.insert(app())).toBe('created');
  });

  it('numbers releases 1, 2, 3 also when two coordinators create them at once, and copies the artifact', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const fileId = await artifact();
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? t.other : t.repos).releases.create(release(a.id, fileId, { version: `1.0.${i}` })),
      ),
    );
    const sequences = outcomes.map((o) => (o.outcome === 'created' ? o.release.sequence : 0)).sort();
    expect(sequences).toEqual([1, 2, 3, 4, 5, 6]);
    const listed = await t.repos.releases.list(a.id);
    expect(listed.map((r) => r.sequence)).toEqual([6, 5, 4, 3, 2, 1]);
    expect(listed[0]).toMatchObject({ status: 'draft', checksumSha256: 'c'.repeat(64), size: 1234, publishedAt: null });

    // A creation whose clock is behind the previous one's is not older than it.
    await t.repos.releases.create(release(a.id, fileId, { version: '2.0.0', createdAt: iso(50) }));
    const late = await t.other.releases.create(release(a.id, fileId, { version: '2.0.1', createdAt: iso(40) }));
    expect(late).toMatchObject({ outcome: 'created', release: { sequence: 8, createdAt: iso(50) } });
  });

  it('refuses an artifact that is not an active, persistent file of the organization', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const pending = await artifact({ status: 'pending', size: null, sha256: null });
    const ttl = await artifact({ cleanupRule: 'ttl' });
    expect(await t.repos.releases.create(release(a.id, newId()))).toEqual({
      outcome: 'bad_artifact',
      problem: 'not_found',
    });
    expect(await t.repos.releases.create(release(a.id, pending))).toMatchObject({
      outcome: 'bad_artifact',
      problem: 'not_active',
    });
    expect(await t.repos.releases.create(release(a.id, ttl))).toMatchObject({
      outcome: 'bad_artifact',
      problem: 'not_persistent',
    });
  });

  it('moves a release from draft to published to yanked, changing only drafts', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const created = await t.repos.releases.create(release(a.id, await artifact(), { notes: 'first' }));
    const id = created.outcome === 'created' ? created.release.id : '';
    const edited = await t.repos.releases.updateDraft(a.id, id, { version: '1.0.1', notes: null });
    expect(edited).toMatchObject({ outcome: 'applied', release: { version: '1.0.1', notes: null, channel: 'stable' } });
    expect(await t.repos.releases.publish(a.id, id, iso(2))).toMatchObject({
      outcome: 'applied',
      release: { status: 'published', publishedAt: iso(2) },
    });
    expect((await t.repos.releases.publish(a.id, id, iso(3))).outcome).toBe('conflict');
    expect((await t.repos.releases.updateDraft(a.id, id, { channel: 'beta' })).outcome).toBe('conflict');
    expect(await t.repos.releases.list(a.id, { status: 'published', channel: 'stable' })).toHaveLength(1);
    expect(await t.repos.releases.list(a.id, { channel: 'beta' })).toEqual([]);
    const yank = (applicationId: string, at: string) =>
      t.repos.rollouts.yank({ applicationId, releaseId: id, at, by: 'user-1' });
    const yanked = await yank(a.id, iso(4));
    expect(yanked).toMatchObject({
      outcome: 'applied',
      release: { status: 'yanked', yankedAt: iso(4) },
      aborted: null,
    });
    expect(await yank(a.id, iso(5))).toMatchObject({ outcome: 'conflict', release: { yankedAt: iso(4) } });
    expect(await yank(newId(), iso(5))).toEqual({ outcome: 'not_found' });
    expect(await t.repos.releases.findInApp(a.id, id)).toMatchObject({ status: 'yanked' });
  });

  it('binds agents all or none, changes a channel, and unbinds, cancelling a pending update job', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const second = await enroll(t.repos, orgId, iso(0));
    const bind = (agentIds: string[]) =>
      t.repos.deviceBindings.bind({
        orgId,
        applicationId: a.id,
        bindings: agentIds.map((id) => ({ id: newId(), agentId: id })),
        channel: 'stable',
        at: iso(1),
      });
    const bound = await bind([agentId, second]);
    expect(bound.outcome).toBe('bound');
    const [b1, b2] = bound.outcome === 'bound' ? bound.bindings : [];
    expect(b1).toMatchObject({ agentId, current: null, forced: false, state: null, failedAttempts: 0 });
    expect(await bind([newId(), second])).toEqual({ outcome: 'already_bound', agentIds: [second] });
    expect((await t.repos.deviceBindings.listByApp(a.id)).map((b) => b.id)).toEqual([b1!.id, b2!.id]);
    expect((await t.repos.deviceBindings.listByAgent(agentId)).map((b) => b.id)).toEqual([b1!.id]);
    // An agent's bindings in bind order, whatever their ids.
    const later = app({ slug: 'bootloader' });
    await t.repos.applications.insert(later);
    const third = await t.repos.deviceBindings.bind({
      orgId,
      applicationId: later.id,
      bindings: [{ id: '00000000-0000-4000-8000-000000000000', agentId }],
      channel: 'stable',
      at: iso(1),
    });
    expect(third.outcome).toBe('bound');
    expect((await t.repos.deviceBindings.listByAgent(agentId)).map((b) => b.id)).toEqual([
      b1!.id,
      '00000000-0000-4000-8000-000000000000',
    ]);
    expect((await t.repos.deviceBindings.findForAgent(second, a.id))?.id).toBe(b2!.id);
    expect((await t.repos.deviceBindings.changeChannel(a.id, b2!.id, 'beta'))?.channel).toBe('beta');
    expect(await t.repos.deviceBindings.countByState()).toEqual([{ state: null, count: 3 }]);

    const job = await insertJob(
      t,
      { orgId, agentId },
      { kind: 'update', triggerId: null, createdAt: iso(2), timeoutMs: null },
    );
    await t.exec(`UPDATE device_bindings SET active_job_id = '${job.id}' WHERE id = '${b1!.id}'`);
    expect(await t.repos.deviceBindings.bindingOfActiveJob(job.id)).toBe(b1!.id);
    const unbound = await t.repos.deviceBindings.unbind(a.id, b1!.id, iso(3), 'The device was unbound');
    expect(unbound?.cancelledJobId).toBe(job.id);
    expect(await t.repos.jobs.findById(job.id)).toMatchObject({
      status: 'cancelled',
      errorMessage: 'The device was unbound',
    });
    expect(await t.repos.deviceBindings.unbind(a.id, b1!.id, iso(4), 'again')).toBeNull();
    expect(await t.repos.deviceBindings.findInApp(a.id, b1!.id)).toBeNull();
  });

  it('binds nothing to an application deleted meanwhile', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    await t.repos.applications.delete(orgId, a.id, iso(1), 'The application was deleted');
    const bound = await t.other.deviceBindings.bind({
      orgId,
      applicationId: a.id,
      bindings: [{ id: newId(), agentId }],
      channel: 'stable',
      at: iso(2),
    });
    expect(bound).toEqual({ outcome: 'not_found' });
    expect(await t.repos.deviceBindings.listByApp(a.id)).toEqual([]);
  });

  it('creates no release in an application deleted meanwhile (its artifact would stay in use)', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const fileId = await artifact();
    await t.repos.applications.delete(orgId, a.id, iso(1), 'The application was deleted');
    expect(await t.other.releases.create(release(a.id, fileId))).toEqual({ outcome: 'not_found' });
    expect(await t.repos.releases.list(a.id)).toEqual([]);
  });

  it('leaves no update job pending of an application deleted while another coordinator evaluates it', async () => {
    const fileId = await artifact();
    for (let round = 0; round < 8; round++) {
      const a = app({ slug: `firmware-${round}` });
      await t.repos.applications.insert(a);
      const created = await t.repos.releases.create(release(a.id, fileId));
      const releaseId = created.outcome === 'created' ? created.release.id : '';
      await t.repos.releases.publish(a.id, releaseId, iso(2));
      const [id] = await bindAll(a.id, [agentId], iso(1));
      const [evaluated, deleted] = await Promise.all([
        t.other.deviceBindings.evaluate([{ bindingId: id!, reason: 'publish' }], T0 + 3),
        t.repos.applications.delete(orgId, a.id, iso(4), 'The application was deleted'),
      ]);
      const issued = evaluated[0]?.createdJobId ?? null;
      // A job the evaluation issued before the deletion is cancelled by it; after, none is issued.
      expect(deleted?.cancelledJobIds).toEqual(issued === null ? [] : [issued]);
      expect(await t.rows("SELECT id FROM jobs WHERE kind = 'update' AND status = 'pending'")).toEqual([]);
    }
  });

  it('issues one update job for a published release, however many coordinators evaluate at once', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const created = await t.repos.releases.create(release(a.id, await artifact()));
    const releaseId = created.outcome === 'created' ? created.release.id : '';
    await t.repos.releases.publish(a.id, releaseId, iso(2));
    const bound = await t.repos.deviceBindings.bind({
      orgId,
      applicationId: a.id,
      bindings: [{ id: newId(), agentId }],
      channel: 'stable',
      at: iso(1),
    });
    const id = bound.outcome === 'bound' ? bound.bindings[0]!.id : '';
    expect(await t.repos.deviceBindings.idsToEvaluate(a.id, 'stable', releaseId)).toEqual([id]);
    const outcomes = (
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          (i % 2 ? t.other : t.repos).deviceBindings.evaluate([{ bindingId: id, reason: 'publish' }], T0 + 3),
        ),
      )
    ).flat();
    const issued = outcomes.filter((o) => o.createdJobId !== null);
    expect(issued).toHaveLength(1);
    const jobId = issued[0]!.createdJobId!;
    expect(outcomes.filter((o) => o.hold === 'job_in_progress')).toHaveLength(3);
    expect(await t.repos.deviceBindings.findInApp(a.id, id)).toMatchObject({
      activeJobId: jobId,
      desiredReleaseId: releaseId,
    });
    expect(await t.repos.jobs.findById(jobId)).toMatchObject({
      kind: 'update',
      source: 'ota',
      status: 'pending',
      number: 1,
    });
    expect(await t.repos.deviceBindings.applicationsOfUpdateJobs([jobId, newId()])).toEqual([
      { jobId, applicationId: a.id },
    ]);
    expect(await t.repos.deviceBindings.applicationsOfUpdateJobs([])).toEqual([]);

    // The job ends: the sweep finds the binding due and settles it.
    await t.repos.jobs.finish(
      agentId,
      jobId,
      { status: 'failed', exitCode: 1, errorMessage: 'no space', output: {} },
      iso(4),
    );
    expect(await t.repos.deviceBindings.idsDue(iso(5), 10)).toEqual([id]);
    const [settled] = await t.repos.deviceBindings.evaluate([{ bindingId: id, reason: 'sweep' }], T0 + 5);
    expect(settled!.binding).toMatchObject({ activeJobId: null, failedAttempts: 1 });
    expect(await t.repos.deviceBindings.evaluate([{ bindingId: newId(), reason: 'sweep' }], T0 + 6)).toMatchObject([
      { binding: null, createdJobId: null },
    ]);

    // Deleting the application removes its releases and bindings.
    const deleted = await t.repos.applications.delete(orgId, a.id, iso(7), 'The application was deleted');
    expect(deleted?.cancelledJobIds).toEqual([]);
    expect(await t.repos.deviceBindings.listByApp(a.id)).toEqual([]);
    expect(await t.repos.releases.list(a.id)).toEqual([]);
  });

  it('evaluates many bindings in one call as one at a time would: numbers in order, each job its own', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const fileId = await artifact();
    const first = await t.repos.releases.create(release(a.id, fileId));
    const firstId = first.outcome === 'created' ? first.release.id : '';
    await t.repos.releases.publish(a.id, firstId, iso(2));
    const agents = [agentId, ...(await Promise.all(Array.from({ length: 5 }, () => enroll(t.repos, orgId, iso(0)))))];
    await t.repos.workflows.replaceForAgent(
      orgId,
      agents[1]!,
      [{ name: 'update', timeout: 90_000, steps: [{ run: 'u' }] }],
      iso(0),
    );
    const revoked = agents[5]!;
    await t.exec(`UPDATE agents SET status = 'revoked' WHERE id = '${revoked}'`);
    const ids = await bindAll(a.id, agents, iso(1));
    // A job already issued on one binding counts before the evaluation's.
    const [one] = await t.repos.deviceBindings.evaluate([{ bindingId: ids[0]!, reason: 'publish' }], T0 + 3);
    expect(one!.createdJobId).not.toBeNull();

    const gone = newId();
    const outcomes = await t.repos.deviceBindings.evaluate(
      [...ids.slice(1), gone, ids[2]!, ids[0]!].map((bindingId) => ({ bindingId, reason: 'publish' as const })),
      T0 + 4,
    );
    expect(outcomes.map((o) => o.bindingId)).toEqual([...ids.slice(1), gone, ids[2]!, ids[0]!]);
    expect(outcomes.map((o) => o.hold)).toEqual([
      null,
      null,
      null,
      null,
      'agent_revoked',
      null,
      'job_in_progress',
      'job_in_progress',
    ]);
    const created = outcomes.slice(0, 4).map((o) => o.createdJobId!);
    expect(outcomes[6]!.createdJobId).toBeNull();
    const jobs = await Promise.all(created.map((id) => t.repos.jobs.findById(id)));
    expect(jobs.map((j) => j!.number)).toEqual([2, 3, 4, 5]);
    expect(jobs.map((j) => j!.seq)).toEqual([...jobs.map((j) => j!.seq)].sort((x, y) => x - y));
    expect(jobs.map((j) => j!.timeoutMs)).toEqual([90_000, null, null, null]);
    expect(jobs[0]).toMatchObject({
      kind: 'update',
      source: 'ota',
      status: 'pending',
      agentId: agents[1],
      workflowName: 'update',
      params: { release_id: firstId, artifact: { id: fileId } },
      createdAt: iso(4),
    });
    const applications = await t.repos.deviceBindings.applicationsOfUpdateJobs(created);
    expect(applications.sort((x, y) => created.indexOf(x.jobId) - created.indexOf(y.jobId))).toEqual(
      created.map((jobId) => ({ jobId, applicationId: a.id })),
    );
    for (const [i, id] of created.entries()) {
      expect(await t.repos.deviceBindings.findInApp(a.id, ids[i + 1]!)).toMatchObject({
        activeJobId: id,
        desiredReleaseId: firstId,
      });
    }
    expect(await t.repos.deviceBindings.findInApp(a.id, ids[5]!)).toMatchObject({
      activeJobId: null,
      desiredReleaseId: firstId,
    });

    // A newer release supersedes the pending jobs, not the one the agent took.
    await t.exec(`UPDATE jobs SET status = 'queued' WHERE id = '${created[1]}'`);
    const second = await t.repos.releases.create(release(a.id, fileId, { version: '2.0.0' }));
    const secondId = second.outcome === 'created' ? second.release.id : '';
    await t.repos.releases.publish(a.id, secondId, iso(6));
    const next = await t.repos.deviceBindings.evaluate(
      ids.slice(1, 4).map((bindingId) => ({ bindingId, reason: 'publish' as const })),
      T0 + 7,
    );
    expect(next.map((o) => o.supersededJobId)).toEqual([created[0], null, created[2]]);
    expect(next.map((o) => o.hold)).toEqual([null, 'job_in_progress', null]);
    expect(await t.repos.jobs.findById(created[0]!)).toMatchObject({
      status: 'cancelled',
      errorMessage: SUPERSEDED_MESSAGE,
      finishedAt: iso(7),
    });
    expect((await t.repos.jobs.findById(next[2]!.createdJobId!))?.number).toBe(7);
  });

  it('numbers the update jobs of one evaluation in each organization apart (a sweep spans organizations)', async () => {
    const other = await orgWithAgent(t.repos, iso(0));
    const bindings: string[] = [];
    for (const owner of [{ orgId, agentId }, other, { orgId, agentId: await enroll(t.repos, orgId, iso(0)) }]) {
      const a = app({ orgId: owner.orgId, slug: `fw-${bindings.length}` });
      await t.repos.applications.insert(a);
      const fileId = await artifact({ orgId: owner.orgId });
      const created = await t.repos.releases.create(release(a.id, fileId, { orgId: owner.orgId }));
      await t.repos.releases.publish(a.id, created.outcome === 'created' ? created.release.id : '', iso(2));
      const bound = await t.repos.deviceBindings.bind({
        orgId: owner.orgId,
        applicationId: a.id,
        bindings: [{ id: newId(), agentId: owner.agentId }],
        channel: 'stable',
        at: iso(1),
      });
      bindings.push(bound.outcome === 'bound' ? bound.bindings[0]!.id : '');
    }
    const outcomes = await t.repos.deviceBindings.evaluate(
      bindings.map((bindingId) => ({ bindingId, reason: 'sweep' as const })),
      T0 + 3,
    );
    const jobs = await Promise.all(outcomes.map((o) => t.repos.jobs.findById(o.createdJobId!)));
    expect(jobs.map((j) => [j!.orgId, j!.number])).toEqual([
      [orgId, 1],
      [other.orgId, 1],
      [orgId, 2],
    ]);
  });
  it('stages a rollout: its waves fixed at publish, its release withheld outside them, counts, each move once', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const agents = [agentId];
    for (let i = 0; i < 3; i++) agents.push(await enroll(t.repos, orgId, iso(0)));
    const ids = await bindAll(a.id, agents, iso(1));
    const created = await t.repos.releases.create(release(a.id, await artifact()));
    const r = created.outcome === 'created' ? created.release : null!;
    // A wave need not be a whole percentage (it was read back as damaged: a 500 on publish).
    const plan = { waves: [12.5, 100], soakSeconds: 0, maxFailureRate: 0, minAttempts: 1 };
    const first = ids[2]!;
    const publish = () =>
      t.repos.rollouts.publish({
        applicationId: a.id,
        releaseId: r.id,
        plan,
        at: iso(2),
        by: 'user-1',
        assign: (bindingIds) => bindingIds.map((bindingId) => ({ bindingId, wave: bindingId === first ? 0 : 1 })),
      });
    const started = await publish();
    expect(started).toMatchObject({
      outcome: 'started',
      release: { status: 'published' },
      rollout: { status: 'running', deviceCount: 4, currentWave: 0, acceptedWave: -1, waveTimes: [[iso(2), null]] },
    });
    expect(await publish()).toMatchObject({ outcome: 'conflict', release: { status: 'published' } });
    const withheld = await t.repos.rollouts.withheld(ids);
    expect(ids.map((id) => withheld.get(id)?.has(r.id) ?? false)).toEqual(ids.map((id) => id !== first));
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 0)).toEqual({ devices: 1, succeeded: 0, failed: 0 });
    await t.exec(`UPDATE device_bindings SET current_sequence = ${r.sequence} WHERE id = '${first}'`);
    expect(Object.fromEntries(await t.repos.rollouts.waveCounts(r.id, r.sequence))).toEqual({
      0: { devices: 1, succeeded: 1, failed: 0 },
      1: { devices: 3, succeeded: 0, failed: 0 },
    });
    // A revoked device no longer counts in its wave (its update job failed for the revocation).
    await t.exec(`UPDATE agents SET status = 'revoked' WHERE id = '${agents[0]}'`);
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 1)).toEqual({ devices: 2, succeeded: 0, failed: 0 });
    expect(await t.repos.rollouts.bindingsOfWave(r.id, 1)).toEqual(ids.filter((id) => id !== first).sort());
    expect(await t.repos.rollouts.boundSince(r.id)).toEqual([]);
    const late = await bindAll(a.id, [await enroll(t.repos, orgId, iso(0))], iso(2));
    expect(await t.repos.rollouts.boundSince(r.id)).toEqual(late);

    // Coordinators moving it at once: one moves it.
    const moved = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        (i % 2 ? t.other : t.repos).rollouts.move(r.id, {
          from: { status: 'running', currentWave: 0 },
          to: {
            currentWave: 1,
            waveTimes: [
              [iso(2), iso(3)],
              [iso(3), null],
            ],
          },
          event: { at: iso(3), event: 'advance', by: 'system', detail: `by ${i}` },
        }),
      ),
    );
    expect(moved.filter((m) => m !== null)).toHaveLength(1);
    expect((await t.repos.rollouts.history(r.id)).map((h) => h.event)).toEqual(['start', 'advance']);
    expect((await t.repos.rollouts.withheld(ids)).size).toBe(0);
    expect(await t.repos.rollouts.listRunning()).toEqual({
      rollouts: [await t.repos.rollouts.find(r.id)],
      damaged: [],
    });
    // One whose row does not parse (a damaged database) is left out of the running ones and
    // reported, naming it and the column; the others are listed.
    const b = app({ slug: 'damaged' });
    await t.repos.applications.insert(b);
    const bCreated = await t.repos.releases.create(release(b.id, await artifact()));
    const damaged = bCreated.outcome === 'created' ? bCreated.release : null!;
    await t.repos.rollouts.publish({
      applicationId: b.id,
      releaseId: damaged.id,
      plan,
      at: iso(2),
      by: 'user-1',
      assign: () => [],
    });
    // Not JSON, or JSON of another shape (hand-edited: it would fail where the value is used).
    for (const [column, sound, value] of [
      ['waves', 'wave_times', '[['],
      ['wave_times', 'waves', '[['],
      ['waves', 'wave_times', '{"0":100}'],
      ['waves', 'wave_times', '["100"]'],
      ['wave_times', 'waves', '[1]'],
      ['wave_times', 'waves', '[["2026-01-01T00:00:00.000Z", 5]]'],
    ]) {
      await t.exec(`UPDATE rollouts SET ${column} = '${value}', ${sound} = '[]' WHERE release_id = '${damaged.id}'`);
      const listed = await t.repos.rollouts.listRunning();
      expect(listed.rollouts.map((x) => x.releaseId)).toEqual([r.id]);
      expect(listed.damaged).toEqual([
        { id: damaged.id, column: `rollouts.${column}`, error: expect.any(DamagedColumnError) },
      ]);
    }
    await t.exec(`UPDATE rollouts SET status = 'completed' WHERE release_id = '${damaged.id}'`);
    // In progress for its organization's overview, with the names a person knows it by.
    expect(await t.repos.rollouts.listInProgress(orgId)).toEqual([
      { ...(await t.repos.rollouts.find(r.id)), applicationSlug: a.slug, version: r.version },
    ]);
    expect(await t.repos.rollouts.listInProgress((await orgWithAgent(t.repos, iso(0))).orgId)).toEqual([]);

    // Another release of the channel ends it as superseded, once.
    const next = await t.repos.releases.create(release(a.id, await artifact(), { version: '2.0.0' }));
    const nextId = next.outcome === 'created' ? next.release.id : '';
    await t.repos.releases.publish(a.id, nextId, iso(4));
    const ended = await Promise.all([
      t.repos.rollouts.supersede(a.id, 'stable', iso(4)),
      t.other.rollouts.supersede(a.id, 'stable', iso(4)),
    ]);
    expect(ended.flat()).toEqual([r.id]);
    expect(await t.repos.rollouts.find(r.id)).toMatchObject({ status: 'superseded', endedAt: iso(4) });
    expect(await t.repos.rollouts.listRunning()).toEqual({ rollouts: [], damaged: [] });
    expect(await t.repos.rollouts.listInProgress(orgId)).toEqual([]);
  });

  it('keeps the ended update jobs of a rollout in progress from retention: its waves count their failures', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const other = await enroll(t.repos, orgId, iso(0));
    const [failing] = await bindAll(a.id, [agentId, other], iso(1));
    const created = await t.repos.releases.create(release(a.id, await artifact()));
    const r = created.outcome === 'created' ? created.release : null!;
    await t.repos.rollouts.publish({
      applicationId: a.id,
      releaseId: r.id,
      plan: { waves: [50, 100], soakSeconds: 0, maxFailureRate: 0.4, minAttempts: 2 },
      at: iso(2),
      by: 'user-1',
      assign: (bindingIds) => bindingIds.map((id) => ({ bindingId: id, wave: 0 })),
    });
    // The first device's update failed (and it gave up); the second's succeeded. Long ago.
    const job = await insertJob(t, { orgId, agentId }, { kind: 'update', createdAt: iso(3), timeoutMs: null });
    await t.exec(`UPDATE jobs SET status = 'failed', finished_at = '${iso(4)}' WHERE id = '${job.id}'`);
    await t.exec(
      `INSERT INTO update_jobs (job_id, org_id, binding_id, application_id, release_id, created_at)
       VALUES ('${job.id}', '${orgId}', '${failing}', '${a.id}', '${r.id}', '${iso(3)}')`,
    );
    await insertJob(t, { orgId, agentId: other }, { createdAt: iso(5), timeoutMs: null }); // the newest job stays anyway
    const counted = { devices: 2, succeeded: 0, failed: 1 };
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 0)).toEqual(counted);
    const sweep = () => t.repos.retention.deleteJobs(orgId, 'failed', iso(365 * 86_400_000), 100);
    expect((await sweep()).deleted.jobs).toBe(0);
    for (const status of ['paused', 'running']) {
      await t.exec(`UPDATE rollouts SET status = '${status}' WHERE release_id = '${r.id}'`);
      expect((await sweep()).deleted.jobs).toBe(0);
    }
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 0)).toEqual(counted);
    // Once the rollout has ended, its jobs age out as any other.
    await t.exec(`UPDATE rollouts SET status = 'aborted', ended_at = '${iso(6)}' WHERE release_id = '${r.id}'`);
    expect((await sweep()).deleted.jobs).toBe(1);
  });

  it("ends a rollout aborted in the transaction of its release's yank: a move read before it moves nothing after", async () => {
    const a = app();
    await t.repos.applications.insert(a);
    await bindAll(a.id, [agentId, await enroll(t.repos, orgId, iso(0))], iso(1));
    const plan = { waves: [50, 100], soakSeconds: 3600, maxFailureRate: 0.5, minAttempts: 1 };
    for (const [round, status] of (['running', 'paused'] as const).entries()) {
      const created = await t.repos.releases.create(release(a.id, await artifact(), { version: `1.${round}.0` }));
      const r = created.outcome === 'created' ? created.release : null!;
      await t.repos.rollouts.publish({
        applicationId: a.id,
        releaseId: r.id,
        plan,
        at: iso(2),
        by: 'user-1',
        assign: (ids) => ids.map((bindingId, i) => ({ bindingId, wave: i })),
      });
      if (status === 'paused') {
        await t.repos.rollouts.move(r.id, {
          from: { status: 'running', currentWave: 0 },
          to: { status: 'paused', pausedReason: 'operator' },
          event: { at: iso(3), event: 'pause', by: 'user-1', detail: null },
        });
      }
      // Read by an operator's move or a coordinator's look, before the yank...
      const seen = (await t.repos.rollouts.find(r.id))!;
      const yanked = await t.other.rollouts.yank({ applicationId: a.id, releaseId: r.id, at: iso(4), by: 'user-2' });
      expect(yanked).toMatchObject({
        outcome: 'applied',
        release: { status: 'yanked' },
        aborted: { releaseId: r.id, status: 'aborted', pausedReason: null, endedAt: iso(4), currentWave: 0 },
      });
      // ...and written after it: the rollout stays aborted.
      expect(
        await t.repos.rollouts.move(r.id, {
          from: { status: seen.status, currentWave: seen.currentWave },
          to: { status: 'running', pausedReason: null, currentWave: 1 },
          event: { at: iso(5), event: 'advance', by: 'system', detail: null },
        }),
      ).toBeNull();
      expect(await t.repos.rollouts.find(r.id)).toMatchObject({ status: 'aborted', currentWave: 0 });
      expect((await t.repos.rollouts.history(r.id)).at(-1)).toEqual({
        at: iso(4),
        event: 'abort',
        by: 'user-2',
        detail: 'the release was yanked',
      });
    }
    expect(await t.repos.rollouts.listInProgress(orgId)).toEqual([]);
    expect(await t.repos.rollouts.listRunning()).toEqual({ rollouts: [], damaged: [] });
  });

  it('keeps the rollout of the release published last when the publishes end the others in another order', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    await bindAll(a.id, [agentId, await enroll(t.repos, orgId, iso(0))], iso(1));
    const publish = async (version: string, at: string) => {
      const created = await t.repos.releases.create(release(a.id, await artifact(), { version }));
      const releaseId = created.outcome === 'created' ? created.release.id : '';
      const started = await t.repos.rollouts.publish({
        applicationId: a.id,
        releaseId,
        plan: { waves: [50, 100], soakSeconds: 3600, maxFailureRate: 0.5, minAttempts: 1 },
        at,
        by: 'user-1',
        assign: (ids) => ids.map((bindingId, i) => ({ bindingId, wave: i })),
      });
      expect(started.outcome).toBe('started');
      return releaseId;
    };
    const status = async (id: string) => (await t.repos.rollouts.find(id))?.status;
    // Two publishes at once, each then ending the channel's other rollouts: the later publish's
    // ending ran first (its request was quicker), the earlier one's after it.
    const first = await publish('1.0.0', iso(2));
    const second = await publish('2.0.0', iso(3));
    expect(await t.other.rollouts.supersede(a.id, 'stable', iso(4))).toEqual([first]);
    expect(await t.repos.rollouts.supersede(a.id, 'stable', iso(4))).toEqual([]);
    expect([await status(first), await status(second)]).toEqual(['superseded', 'running']);
    // Published at the same instant: the higher sequence is the later one.
    const third = await publish('3.0.0', iso(5));
    const fourth = await publish('4.0.0', iso(5));
    expect((await t.repos.rollouts.supersede(a.id, 'stable', iso(6))).sort()).toEqual([second, third].sort());
    expect(await t.other.rollouts.supersede(a.id, 'stable', iso(6))).toEqual([]);
    expect([await status(third), await status(fourth)]).toEqual(['superseded', 'running']);
    // The later publish committed and ended the others before the earlier one committed: the
    // earlier one's ending ends its own rollout, where both stayed running.
    const sixth = await publish('6.0.0', iso(8));
    expect(await t.repos.rollouts.supersede(a.id, 'stable', iso(8))).toEqual([fourth]);
    const fifth = await publish('5.0.0', iso(7));
    expect(await t.other.rollouts.supersede(a.id, 'stable', iso(9))).toEqual([fifth]);
    expect([await status(fifth), await status(sixth)]).toEqual(['superseded', 'running']);
  });

  it("leaves the devices of revoked agents out of a rollout's waves (they get no update)", async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const agents = [agentId, await enroll(t.repos, orgId, iso(0)), await enroll(t.repos, orgId, iso(0))];
    const ids = await bindAll(a.id, agents, iso(1));
    await t.exec(`UPDATE agents SET status = 'revoked' WHERE id = '${agents[1]}'`);
    const created = await t.repos.releases.create(release(a.id, await artifact()));
    const r = created.outcome === 'created' ? created.release : null!;
    const offered: string[][] = [];
    const started = await t.repos.rollouts.publish({
      applicationId: a.id,
      releaseId: r.id,
      plan: { waves: [50, 100], soakSeconds: 0, maxFailureRate: 0, minAttempts: 1 },
      at: iso(2),
      by: 'user-1',
      assign: (bindingIds) => {
        offered.push([...bindingIds]);
        return bindingIds.map((bindingId, i) => ({ bindingId, wave: i === 0 ? 0 : 1 }));
      },
    });
    expect(started).toMatchObject({ outcome: 'started', rollout: { deviceCount: 2 } });
    expect(offered).toEqual([[ids[0]!, ids[2]!].sort()]);
  });

  it("leaves a device moved to another channel since out of its rollout's counts (it never gets the release)", async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const agents = [agentId, await enroll(t.repos, orgId, iso(0)), await enroll(t.repos, orgId, iso(0))];
    const ids = await bindAll(a.id, agents, iso(1));
    const created = await t.repos.releases.create(release(a.id, await artifact()));
    const r = created.outcome === 'created' ? created.release : null!;
    await t.repos.rollouts.publish({
      applicationId: a.id,
      releaseId: r.id,
      plan: { waves: [67, 100], soakSeconds: 0, maxFailureRate: 0.5, minAttempts: 1 },
      at: iso(2),
      by: 'user-1',
      assign: (bindingIds) => bindingIds.map((bindingId) => ({ bindingId, wave: bindingId === ids[2] ? 1 : 0 })),
    });
    const [done, moved] = [ids[0]!, ids[1]!];
    await t.exec(`UPDATE device_bindings SET current_sequence = ${r.sequence} WHERE id = '${done}'`);
    expect(await t.repos.deviceBindings.changeChannel(a.id, moved, 'beta')).toMatchObject({ channel: 'beta' });
    // Wave 1 ended: one device runs the release, the other is on `beta` now, where it is not desired.
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 0)).toEqual({ devices: 1, succeeded: 1, failed: 0 });
    expect((await t.repos.rollouts.waveCounts(r.id, r.sequence)).get(0)).toEqual({
      devices: 1,
      succeeded: 1,
      failed: 0,
    });
    // Back on the channel, it counts again (and is given the release again).
    await t.repos.deviceBindings.changeChannel(a.id, moved, 'stable');
    expect(await t.repos.rollouts.countsOfWave(r.id, r.sequence, 0)).toEqual({ devices: 2, succeeded: 1, failed: 0 });
  });

  describe('device groups', () => {
    const labelled = async (labels: Record<string, string>) => {
      const id = await enroll(t.repos, orgId, iso(0));
      await t.repos.agents.setReportedLabels(id, { os: 'linux', arch: 'x64', ...labels });
      return id;
    };
    const pass = (input: Partial<DeviceGroupPassInput>, repos = t.repos) =>
      repos.deviceGroups.pass({ orgId, at: iso(5), cancelMessage: 'removed by the group', ...input });
    const relabel = async (id: string, operatorLabels: Record<string, string>) => {
      const { revision } = (await t.repos.agents.findById(id))!;
      expect(await t.repos.agents.edit(orgId, id, revision, { operatorLabels })).toMatchObject({ operatorLabels });
    };

    it('binds the matching agents once on the default channel, removes them when they stop matching, never a manual binding', async () => {
      const a = app({ defaultChannel: 'beta' });
      await t.repos.applications.insert(a);
      await t.repos.agents.setReportedLabels(agentId, { os: 'linux', arch: 'x64', role: 'kiosk' });
      const byHand = await labelled({ role: 'kiosk' });
      const gateway = await labelled({ role: 'gateway' });
      const revoked = await labelled({ role: 'kiosk' });
      await t.exec(`UPDATE agents SET status = 'revoked' WHERE id = '${revoked}'`);
      await t.repos.deviceBindings.bind({
        orgId,
        applicationId: a.id,
        bindings: [{ id: newId(), agentId: byHand }],
        channel: 'stable',
        at: iso(1),
      });

      const [set] = await pass({ applicationId: a.id, setSelector: { selector: 'role=kiosk' } });
      expect(set!.application).toMatchObject({ id: a.id, deviceSelector: 'role=kiosk' });
      expect(set!.matching).toBe(2);
      expect(set!.unbound).toEqual([]);
      expect(set!.bound).toHaveLength(1);
      expect(set!.bound[0]).toMatchObject({ agentId, channel: 'beta', origin: 'selector', createdAt: iso(5) });
      expect((await t.repos.applications.findById(a.id))?.deviceSelector).toBe('role=kiosk');
      const listed = await t.repos.deviceBindings.listByApp(a.id);
      expect(listed.map((b) => [b.agentId, b.origin])).toEqual([
        [byHand, 'manual'],
        [agentId, 'selector'],
      ]);
      // Again: nothing more to do.
      expect(await pass({ applicationId: a.id })).toMatchObject([{ matching: 2, bound: [], unbound: [] }]);

      // The kiosk is relabelled: its binding goes, with its update job not yet taken.
      const job = await insertJob(
        t,
        { orgId, agentId },
        { kind: 'update', triggerId: null, createdAt: iso(2), timeoutMs: null },
      );
      await t.exec(`UPDATE device_bindings SET active_job_id = '${job.id}' WHERE id = '${set!.bound[0]!.id}'`);
      await relabel(agentId, { role: 'retired' });
      await relabel(byHand, { role: 'retired' });
      const [relabelled] = await pass({ agentIds: [agentId, byHand, gateway] });
      expect(relabelled!.matching).toBe(0);
      expect(relabelled!.unbound).toEqual([
        {
          binding: expect.objectContaining({ id: set!.bound[0]!.id, agentId, origin: 'selector' }),
          cancelledJobId: job.id,
        },
      ]);
      expect(await t.repos.jobs.findById(job.id)).toMatchObject({
        status: 'cancelled',
        errorMessage: 'removed by the group',
        finishedAt: iso(5),
      });
      expect((await t.repos.deviceBindings.listByApp(a.id)).map((b) => b.agentId)).toEqual([byHand]);

      // Back in the group, then the selector is removed: only the selector's bindings go.
      await relabel(agentId, {});
      expect((await pass({ agentIds: [agentId] }))[0]!.bound.map((b) => b.agentId)).toEqual([agentId]);
      const [cleared] = await pass({ applicationId: a.id, setSelector: { selector: null } });
      expect(cleared).toMatchObject({ application: { deviceSelector: null }, matching: 0, bound: [] });
      expect(cleared!.unbound.map((u) => [u.binding.agentId, u.cancelledJobId])).toEqual([[agentId, null]]);
      expect((await t.repos.deviceBindings.listByApp(a.id)).map((b) => [b.agentId, b.origin])).toEqual([
        [byHand, 'manual'],
      ]);
      // An agent's pass finds no application with a selector now.
      expect(await pass({ agentIds: [agentId] })).toEqual([]);
    });

    it('passes over every application with a selector for the agents given, and leaves deleted ones out', async () => {
      const kiosk = app({ slug: 'kiosk' });
      const signage = app({ slug: 'signage' });
      const none = app({ slug: 'none' });
      for (const x of [kiosk, signage, none]) await t.repos.applications.insert(x);
      await pass({ applicationId: kiosk.id, setSelector: { selector: 'role=kiosk' } });
      await pass({ applicationId: signage.id, setSelector: { selector: 'screen' } });
      const both = await labelled({ role: 'kiosk', screen: '' });
      const changes = await pass({ agentIds: [both] });
      expect(changes.map((c) => [c.application.slug, c.bound.length]).sort()).toEqual([
        ['kiosk', 1],
        ['signage', 1],
      ]);
      expect(await pass({ agentIds: [] })).toEqual([]);
      await t.repos.applications.delete(orgId, signage.id, iso(6), 'deleted');
      expect((await pass({ agentIds: [both] })).map((c) => c.application.slug)).toEqual(['kiosk']);
      expect(await pass({ applicationId: signage.id, setSelector: { selector: 'x' } })).toEqual([]);
    });

    it('binds each agent once when coordinators pass at once, and agents bound by hand meanwhile keep their binding', async () => {
      const agents = await Promise.all(Array.from({ length: 6 }, () => labelled({ role: 'kiosk' })));
      const b = app({ slug: 'kiosk-2' });
      await t.repos.applications.insert(b);
      const outcomes = await Promise.all([
        pass({ applicationId: b.id, setSelector: { selector: 'role=kiosk' } }),
        pass({ applicationId: b.id, setSelector: { selector: 'role=kiosk' } }, t.other),
        pass({ agentIds: agents.slice(0, 3) }, t.other),
        pass({ agentIds: agents.slice(3) }),
        t.other.deviceBindings.bind({
          orgId,
          applicationId: b.id,
          bindings: [{ id: newId(), agentId: agents[0]! }],
          channel: 'stable',
          at: iso(2),
        }),
      ]);
      const passes = outcomes.slice(0, 4) as DeviceGroupChange[][];
      const byGroup = passes.flat().flatMap((c) => c.bound.map((x) => x.agentId));
      const manual = outcomes[4] as BindResult;
      const listed = await t.repos.deviceBindings.listByApp(b.id);
      expect(listed.map((x) => x.agentId).sort()).toEqual([...agents].sort());
      expect(byGroup.length + (manual.outcome === 'bound' ? 1 : 0)).toBe(6);
      expect(new Set(byGroup).size).toBe(byGroup.length);
    });
  });

  it('changes release keys only from the set the change was checked against, with nothing else of the patch', async () => {
    const a = app({ releaseKeys: ['k1'] });
    await t.repos.applications.insert(a);
    const rotation = { app: 'firmware', generation: 1, keys: ['k2'], signedBy: 'k1', signature: 's' };
    const stale = await t.repos.applications.update(orgId, a.id, {
      defaultChannel: 'beta',
      releaseKeys: { keys: ['k3'], rotations: [rotation], from: ['k0'] },
    });
    expect(stale).toMatchObject({
      outcome: 'keys_changed',
      app: { releaseKeys: ['k1'], releaseKeyRotations: [], defaultChannel: 'stable' },
    });
    const applied = await t.repos.applications.update(orgId, a.id, {
      defaultChannel: 'beta',
      releaseKeys: { keys: ['k2'], rotations: [rotation], from: ['k1'] },
    });
    expect(applied).toMatchObject({
      outcome: 'updated',
      app: { releaseKeys: ['k2'], releaseKeyRotations: [rotation], defaultChannel: 'beta' },
    });
    // The same rotation again (a retry, or a second client): the keys are no longer its `from`.
    expect(
      await t.repos.applications.update(orgId, a.id, {
        defaultChannel: 'edge',
        releaseKeys: { keys: ['k2'], rotations: [rotation], from: ['k1'] },
      }),
    ).toMatchObject({ outcome: 'keys_changed', app: { releaseKeys: ['k2'], defaultChannel: 'beta' } });
    const first = app({ slug: 'firmware-2' });
    await t.repos.applications.insert(first);
    expect(
      await t.repos.applications.update(orgId, first.id, { releaseKeys: { keys: ['k1'], rotations: [], from: null } }),
    ).toMatchObject({ outcome: 'updated', app: { releaseKeys: ['k1'], releaseKeyRotations: [] } });
  });

  it('stores a maintenance window, holds an optional update outside it, and finds the binding due when it opens and closes', async () => {
    const a = app();
    await t.repos.applications.insert(a);
    const maintenanceWindow = { cron: '0 13 * * *', timezone: 'UTC', durationMinutes: 30 };
    expect(await t.repos.applications.update(orgId, a.id, { maintenanceWindow })).toMatchObject({
      app: { maintenanceWindow },
    });
    // Another field changed alone leaves the window; null removes it.
    expect(await t.repos.applications.update(orgId, a.id, { defaultChannel: 'beta' })).toMatchObject({
      app: { defaultChannel: 'beta', maintenanceWindow },
    });
    expect(await t.repos.applications.update(orgId, a.id, { maintenanceWindow: null })).toMatchObject({
      app: { maintenanceWindow: null },
    });
    await t.repos.applications.update(orgId, a.id, { maintenanceWindow, defaultChannel: 'stable' });
    expect((await t.repos.applications.listByOrg(orgId))[0]).toMatchObject({ maintenanceWindow });

    const created = await t.repos.releases.create(release(a.id, await artifact()));
    await t.repos.releases.publish(a.id, created.outcome === 'created' ? created.release.id : '', iso(2));
    const bound = await t.repos.deviceBindings.bind({
      orgId,
      applicationId: a.id,
      bindings: [{ id: newId(), agentId }],
      channel: 'stable',
      at: iso(1),
    });
    const id = bound.outcome === 'bound' ? bound.bindings[0]!.id : '';
    const HOUR = 3_600_000;
    const [held] = await t.repos.deviceBindings.evaluate([{ bindingId: id, reason: 'publish' }], T0 + 3);
    expect(held).toMatchObject({ hold: 'maintenance_window', createdJobId: null });
    expect(await t.repos.deviceBindings.findInApp(a.id, id)).toMatchObject({
      activeJobId: null,
      windowOpensAt: iso(HOUR),
      windowClosesAt: null,
    });
    expect(await t.repos.deviceBindings.idsDue(iso(HOUR - 1), 10)).toEqual([]);
    expect(await t.repos.deviceBindings.idsDue(iso(HOUR), 10)).toEqual([id]);

    const [opened] = await t.repos.deviceBindings.evaluate([{ bindingId: id, reason: 'sweep' }], T0 + HOUR);
    expect(opened!.createdJobId).not.toBeNull();
    expect(opened!.binding).toMatchObject({ windowOpensAt: null, windowClosesAt: iso(1.5 * HOUR) });
    expect(await t.repos.deviceBindings.idsDue(iso(1.5 * HOUR - 1), 10)).toEqual([]);
    expect(await t.repos.deviceBindings.idsDue(iso(1.5 * HOUR), 10)).toEqual([id]);

    // Not taken by the agent when the window closed: withdrawn, and the binding waits for the next one.
    const [closed] = await t.repos.deviceBindings.evaluate([{ bindingId: id, reason: 'sweep' }], T0 + 1.5 * HOUR);
    expect(closed).toMatchObject({ supersededJobId: opened!.createdJobId, hold: 'maintenance_window' });
    expect(closed!.binding).toMatchObject({ activeJobId: null, windowOpensAt: iso(25 * HOUR), windowClosesAt: null });
    expect(await t.repos.jobs.findById(opened!.createdJobId!)).toMatchObject({
      status: 'cancelled',
      errorMessage: WINDOW_CLOSED_MESSAGE,
    });
    expect(await t.repos.deviceBindings.idsDue(iso(2 * HOUR), 10)).toEqual([]);
  });
});
