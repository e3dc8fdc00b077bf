import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { filesFixture, insertRelease, T0, type FilesFixture } from '../storage/fixture.js';

const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const DAY = 86400_000;

describe('file repository', () => {
  let f: FilesFixture;
  beforeEach(async () => {
    f = await filesFixture();
  });
  afterEach(() => f.close());

  it('lists newest first within the given bindings, filtered by binding and status, up to the limit', async () => {
    const other = await f.addBinding('other');
    const a1 = await f.insertFile({ createdAt: iso(1) });
    const b1 = await f.insertFile({ bindingId: other, createdAt: iso(2), status: 'pending' });
    const a2 = await f.insertFile({ createdAt: iso(3), status: 'deleted' });
    const q = { orgId: f.orgId, bindingIds: null, bindingId: null, status: null, limit: 200 };
    const ids = async (over: object) => (await f.files.list({ ...q, ...over })).map((x) => x.id);
    expect(await ids({})).toEqual([a2.id, b1.id, a1.id]);
    expect(await ids({ bindingIds: [f.bindingId] })).toEqual([a2.id, a1.id]);
    expect(await ids({ bindingIds: [] })).toEqual([]);
    expect(await ids({ bindingId: other })).toEqual([b1.id]);
    expect(await ids({ bindingIds: [f.bindingId], bindingId: other })).toEqual([]);
    expect(await ids({ status: 'deleted' })).toEqual([a2.id]);
    expect(await ids({ limit: 2 })).toEqual([a2.id, b1.id]);
    expect(await ids({ orgId: '00000000-0000-4000-8000-000000000000' })).toEqual([]);
  });

  it('hides the files of a deleted binding from lookups and lists, but not from transfers', async () => {
    const other = await f.addBinding('other');
    const file = await f.insertFile({ bindingId: other });
    await f.bindings.softDelete(f.orgId, other, iso(5));
    expect(await f.files.findInOrg(f.orgId, file.id)).toBeNull();
    expect(await f.files.findActiveInOrg(f.orgId, [file.id])).toEqual([]);
    expect((await f.files.findForTransfer(file.id))?.bindingDeleted).toBe(true);
    expect((await f.files.findBinding(other))?.name).toBe('other');
  });

  it('completes only a pending file', async () => {
    const file = await f.insertFile({ status: 'pending', size: null, sha256: null });
    const done = { size: 5, sha256: 'b'.repeat(64), completedAt: iso(10), expiresAt: null };
    expect(await f.files.complete(file.id, done)).toBe(true);
    expect(await f.files.complete(file.id, done)).toBe(false);
    expect(await f.files.findInOrg(f.orgId, file.id)).toMatchObject({
      status: 'active',
      size: 5,
      completedAt: iso(10),
    });
  });

  it('claims a file for deletion once, refuses one in use, and takes over an expired lease', async () => {
    const file = await f.insertFile();
    const first = await f.files.claimForDelete(file.id, iso(0), iso(1000));
    expect(first).toMatchObject({ outcome: 'claimed', file: { status: 'deleting', nextDeleteAt: iso(1000) } });
    expect((await f.files.claimForDelete(file.id, iso(500), iso(1500))).outcome).toBe('unchanged');
    expect((await f.files.claimForDelete(file.id, iso(1000), iso(2000))).outcome).toBe('claimed');
    expect(await f.files.markDeleted(file.id, iso(1100))).toBe(true);
    expect(await f.files.markDeleted(file.id, iso(1200))).toBe(false);
    expect(await f.files.claimForDelete(file.id, iso(1300), iso(2300))).toMatchObject({
      outcome: 'unchanged',
      file: { status: 'deleted', deletedAt: iso(1100) },
    });
    expect(await f.files.claimForDelete('00000000-0000-4000-8000-000000000000', iso(0), iso(1))).toEqual({
      outcome: 'not_found',
    });

    const artifact = await f.insertFile();
    const release = insertRelease(f.db, f.orgId, artifact.id, 'published');
    expect((await f.files.claimForDelete(artifact.id, iso(0), iso(1))).outcome).toBe('in_use');
    expect(await f.files.isInUse(artifact.id)).toBe(true);
    f.db.prepare(`UPDATE releases SET status = 'yanked' WHERE id = ?`).run(release);
    expect(await f.files.isInUse(artifact.id)).toBe(false);
    expect((await f.files.claimForDelete(artifact.id, iso(0), iso(1))).outcome).toBe('claimed');
  });

  it('counts the failed attempts and keeps the error and the next retry', async () => {
    const file = await f.insertFile();
    await f.files.claimForDelete(file.id, iso(0), iso(1000));
    const failed = await f.files.markDeleteFailed(file.id, 'EACCES'.repeat(300), iso(30_000));
    expect(failed).toMatchObject({ status: 'delete_failed', deleteAttempts: 1, nextDeleteAt: iso(30_000) });
    expect(failed?.lastDeleteError).toHaveLength(1000);
    expect(await f.files.markDeleteFailed(file.id, 'again', iso(60_000))).toBeNull(); // not deleting any more
  });

  it('finds due: expired ttl files, abandoned uploads and retries whose time came, never files in use', async () => {
    const expired = await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    const jobEnd = await f.insertFile({ cleanupRule: 'on_job_end', expiresAt: iso(0) });
    await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(1) }); // not yet
    await f.insertFile({ cleanupRule: 'persistent' });
    await f.insertFile({ cleanupRule: 'ttl', status: 'pending', expiresAt: iso(-DAY), uploadExpiresAt: iso(-DAY + 1) }); // upload URL expired less than a day ago
    const abandoned = await f.insertFile({ status: 'pending', uploadExpiresAt: iso(-DAY - 1) });
    const retry = await f.insertFile({ status: 'delete_failed', nextDeleteAt: iso(0) });
    await f.insertFile({ status: 'delete_failed', nextDeleteAt: iso(1) });
    const staleLease = await f.insertFile({ status: 'deleting', nextDeleteAt: iso(-1) });
    await f.insertFile({ status: 'deleting', nextDeleteAt: iso(10) });
    await f.insertFile({ status: 'deleted', cleanupRule: 'ttl', expiresAt: iso(-5) });
    const inUse = await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    insertRelease(f.db, f.orgId, inUse.id, 'draft');

    const claimed = await f.files.claimDue({
      now: iso(0),
      abandonedBefore: iso(-DAY),
      leaseUntil: iso(300_000),
      limit: 100,
    });
    expect(claimed.map((x) => x.id).sort()).toEqual(
      [expired.id, jobEnd.id, abandoned.id, retry.id, staleLease.id].sort(),
    );
    expect(claimed.every((x) => x.status === 'deleting' && x.nextDeleteAt === iso(300_000))).toBe(true);
    // Claimed files are leased: the next sweep does not take them again.
    const again = await f.files.claimDue({
      now: iso(0),
      abandonedBefore: iso(-DAY),
      leaseUntil: iso(300_000),
      limit: 100,
    });
    expect(again).toEqual([]);
    // The limit bounds one claim.
    await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    await f.insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    expect(
      await f.files.claimDue({ now: iso(0), abandonedBefore: iso(-DAY), leaseUntil: iso(300_000), limit: 2 }),
    ).toHaveLength(2);
  });

  it('counts the files of a binding that are not deleted', async () => {
    await f.insertFile();
    await f.insertFile({ status: 'pending' });
    await f.insertFile({ status: 'deleted' });
    expect(await f.files.countUndeletedInBinding(f.bindingId)).toBe(2);
  });
});
