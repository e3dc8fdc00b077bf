import { beforeEach, describe, expect, it } from 'vitest';
import type { FileListPosition, FileListQuery, StoredFile } from '../../../src/domain/model/files.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const DAY = 86400_000;
const databases = databasesOfThisFile();

describe.each(DATABASES)('file repository (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let bindingId: string;

  const addBinding = async (name: string) => {
    const id = newId();
    await t.repos.storageBindings.insert({
      id,
      orgId,
      name,
      backend: 'local',
      config: {},
      isDefault: false,
      createdAt: iso(0),
    });
    return id;
  };
  beforeEach(async () => {
    ({ orgId } = await orgWithAgent(t.repos, iso(0)));
    bindingId = await addBinding('local');
  });

  /** A file row with sensible defaults. */
  const insertFile = async (fields: Partial<StoredFile> = {}): Promise<StoredFile> => {
    const id = fields.id ?? newId();
    const file: StoredFile = {
      id,
      orgId,
      bindingId,
      filename: 'f.txt',
      contentType: 'text/plain',
      size: 1,
      sha256: 'a'.repeat(64),
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
    };
    await t.repos.files.insert(file);
    return file;
  };

  /** A release row referencing `fileId`, written as is (whatever the file). */
  const insertRelease = async (fileId: string, status: 'draft' | 'published' | 'yanked') => {
    const appId = newId();
    const id = newId();
    await t.exec(`INSERT INTO applications (id, org_id, slug, update_workflow_name, created_at)
      VALUES ('${appId}', '${orgId}', 'app-${appId.slice(0, 8)}', 'update', '${iso(0)}')`);
    await t.exec(`INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status,
        artifact_file_id, checksum_sha256, size, created_at)
      VALUES ('${id}', '${appId}', '1', 1, 'stable', 'optional', '${status}', '${fileId}', '${'a'.repeat(64)}', 1, '${iso(0)}')`);
    return id;
  };

  it('lists newest first within the given bindings, filtered by binding and status, up to the limit', async () => {
    const other = await addBinding('other');
    const a1 = await insertFile({ createdAt: iso(1) });
    const b1 = await insertFile({ bindingId: other, createdAt: iso(2), status: 'pending' });
    const a2 = await insertFile({ createdAt: iso(3), status: 'deleted' });
    const q = { orgId: orgId, bindingIds: null, bindingId: null, status: null, after: null, limit: 200 };
    const ids = async (over: object) => (await t.repos.files.list({ ...q, ...over })).files.map((x) => x.id);
    expect(await ids({})).toEqual([a2.id, b1.id, a1.id]);
    expect(await ids({ bindingIds: [bindingId] })).toEqual([a2.id, a1.id]);
    expect(await ids({ bindingIds: [] })).toEqual([]);
    expect(await ids({ bindingId: other })).toEqual([b1.id]);
    expect(await ids({ bindingIds: [bindingId], bindingId: other })).toEqual([]);
    expect(await ids({ status: 'deleted' })).toEqual([a2.id]);
    expect(await ids({ limit: 2 })).toEqual([a2.id, b1.id]);
    expect(await ids({ orgId: '00000000-0000-4000-8000-000000000000' })).toEqual([]);
  });

  it('pages through every file of a filter, newest first, files of one millisecond included', async () => {
    const other = await addBinding('other');
    // Five files in one millisecond, then older ones; of several statuses and two bindings.
    const made: StoredFile[] = [];
    for (let i = 0; i < 9; i++) {
      made.push(
        await insertFile({
          createdAt: iso(i < 4 ? i : 4),
          status: i % 3 === 0 ? 'deleted' : 'active',
          bindingId: i % 2 === 0 ? other : bindingId,
        }),
      );
    }
    const newestFirst = [...made].reverse();
    const q = { orgId: orgId, bindingIds: null, bindingId: null, status: null, after: null, limit: 2 };
    const all = async (over: Partial<FileListQuery>) => {
      const seen: string[] = [];
      let after: FileListPosition | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const page = await t.repos.files.list({ ...q, ...over, after });
        seen.push(...page.files.map((f) => f.id));
        if (page.next === null) return seen;
        expect(page.files).toHaveLength(2);
        expect(page.next.createdAt).toBe(page.files[1]!.createdAt);
        after = page.next;
      }
      throw new Error('no last page');
    };
    const ids = (files: StoredFile[]) => files.map((f) => f.id);
    expect(await all({})).toEqual(ids(newestFirst));
    expect(await all({ status: 'deleted' })).toEqual(ids(newestFirst.filter((f) => f.status === 'deleted')));
    expect(await all({ status: 'active' })).toEqual(ids(newestFirst.filter((f) => f.status === 'active')));
    expect(await all({ bindingId: other })).toEqual(ids(newestFirst.filter((f) => f.bindingId === other)));
    expect(await all({ bindingIds: [bindingId], status: 'deleted' })).toEqual(
      ids(newestFirst.filter((f) => f.bindingId === bindingId && f.status === 'deleted')),
    );
    // A page of exactly the rest: no cursor after it.
    expect((await t.repos.files.list({ ...q, limit: 9 })).next).toBeNull();
  });

  it('deletes a binding only without files not deleted, and stores no file in a deleted one', async () => {
    const other = await addBinding('other');
    const file = await insertFile({ bindingId: other, status: 'pending' });
    expect(await t.other.storageBindings.softDeleteIfEmpty(orgId, other, iso(5))).toEqual({
      outcome: 'holds_files',
      files: 1,
    });
    await t.exec(`UPDATE files SET status = 'deleted' WHERE id = '${file.id}'`);
    expect(await t.other.storageBindings.softDeleteIfEmpty(orgId, other, iso(6))).toEqual({ outcome: 'deleted' });
    const late = { ...file, id: newId() };
    expect(await t.repos.files.insert(late)).toBe(false);
    expect(await t.rows(`SELECT id FROM files WHERE id = '${late.id}'`)).toEqual([]);
  });

  it('hides the files of a deleted binding from lookups and lists, but not from transfers', async () => {
    const other = await addBinding('other');
    const file = await insertFile({ bindingId: other });
    // Deleted with its files (as bindings deleted before their files counted were): hidden.
    await t.exec(`UPDATE storage_bindings SET deleted_at = '${iso(5)}' WHERE id = '${other}'`);
    expect(await t.repos.files.findInOrg(orgId, file.id)).toBeNull();
    expect(await t.repos.files.findActiveInOrg(orgId, [file.id])).toEqual([]);
    expect((await t.repos.files.findForTransfer(file.id))?.bindingDeleted).toBe(true);
    expect((await t.repos.files.findBinding(other))?.name).toBe('other');
  });

  it("finds the active files of the organization among several ids, each once, not another's or a hidden one", async () => {
    const a = await insertFile();
    const b = await insertFile();
    const pending = await insertFile({ status: 'pending' });
    const other = await addBinding('other');
    const hidden = await insertFile({ bindingId: other });
    // Deleted with its files (as bindings deleted before their files counted were): hidden.
    await t.exec(`UPDATE storage_bindings SET deleted_at = '${iso(5)}' WHERE id = '${other}'`);
    const found = await t.repos.files.findActiveInOrg(orgId, [a.id, b.id, a.id, pending.id, hidden.id, newId()]);
    expect(found.map((f) => f.id).sort()).toEqual([a.id, b.id].sort());
    expect(found.find((f) => f.id === a.id)).toEqual(a);
    const { orgId: otherOrgId } = await orgWithAgent(t.repos, iso(0));
    expect(await t.repos.files.findActiveInOrg(otherOrgId, [a.id, b.id])).toEqual([]);
  });

  it('completes only a pending file', async () => {
    const file = await insertFile({ status: 'pending', size: null, sha256: null });
    const done = { size: 5, sha256: 'b'.repeat(64), completedAt: iso(10), expiresAt: null };
    expect(await t.repos.files.complete(file.id, done)).toBe(true);
    expect(await t.repos.files.complete(file.id, done)).toBe(false);
    expect(await t.repos.files.findInOrg(orgId, file.id)).toMatchObject({
      status: 'active',
      size: 5,
      completedAt: iso(10),
    });
  });

  it('claims a file for deletion once, refuses one in use, and takes over an expired lease', async () => {
    const file = await insertFile();
    const first = await t.repos.files.claimForDelete(file.id, iso(0), iso(1000));
    expect(first).toMatchObject({ outcome: 'claimed', file: { status: 'deleting', nextDeleteAt: iso(1000) } });
    expect((await t.repos.files.claimForDelete(file.id, iso(500), iso(1500))).outcome).toBe('unchanged');
    expect((await t.repos.files.claimForDelete(file.id, iso(1000), iso(2000))).outcome).toBe('claimed');
    expect(await t.repos.files.markDeleted(file.id, iso(1100))).toBe(true);
    expect(await t.repos.files.markDeleted(file.id, iso(1200))).toBe(false);
    expect(await t.repos.files.claimForDelete(file.id, iso(1300), iso(2300))).toMatchObject({
      outcome: 'unchanged',
      file: { status: 'deleted', deletedAt: iso(1100) },
    });
    expect(await t.repos.files.claimForDelete('00000000-0000-4000-8000-000000000000', iso(0), iso(1))).toEqual({
      outcome: 'not_found',
    });

    const artifact = await insertFile();
    const release = await insertRelease(artifact.id, 'published');
    expect((await t.repos.files.claimForDelete(artifact.id, iso(0), iso(1))).outcome).toBe('in_use');
    expect(await t.repos.files.isInUse(artifact.id)).toBe(true);
    await t.exec(`UPDATE releases SET status = 'yanked' WHERE id = '${release}'`);
    expect(await t.repos.files.isInUse(artifact.id)).toBe(false);
    expect((await t.repos.files.claimForDelete(artifact.id, iso(0), iso(1))).outcome).toBe('claimed');
  });

  it('counts the failed attempts and keeps the error and the next retry', async () => {
    const file = await insertFile();
    await t.repos.files.claimForDelete(file.id, iso(0), iso(1000));
    const failed = await t.repos.files.markDeleteFailed(file.id, 'EACCES'.repeat(300), iso(30_000));
    expect(failed).toMatchObject({ status: 'delete_failed', deleteAttempts: 1, nextDeleteAt: iso(30_000) });
    expect(failed?.lastDeleteError).toHaveLength(1000);
    expect(await t.repos.files.markDeleteFailed(file.id, 'again', iso(60_000))).toBeNull(); // not deleting any more
  });

  it('finds due: expired ttl files, abandoned uploads and retries whose time came, never files in use', async () => {
    const expired = await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    const jobEnd = await insertFile({ cleanupRule: 'on_job_end', expiresAt: iso(0) });
    await insertFile({ cleanupRule: 'ttl', expiresAt: iso(1) }); // not yet
    await insertFile({ cleanupRule: 'persistent' });
    await insertFile({ cleanupRule: 'ttl', status: 'pending', expiresAt: iso(-DAY), uploadExpiresAt: iso(-DAY + 1) }); // upload URL expired less than a day ago
    const abandoned = await insertFile({ status: 'pending', uploadExpiresAt: iso(-DAY - 1) });
    const retry = await insertFile({ status: 'delete_failed', nextDeleteAt: iso(0) });
    await insertFile({ status: 'delete_failed', nextDeleteAt: iso(1) });
    const staleLease = await insertFile({ status: 'deleting', nextDeleteAt: iso(-1) });
    await insertFile({ status: 'deleting', nextDeleteAt: iso(10) });
    await insertFile({ status: 'deleted', cleanupRule: 'ttl', expiresAt: iso(-5) });
    const inUse = await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    await insertRelease(inUse.id, 'draft');

    const claimed = await t.repos.files.claimDue({
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
    const again = await t.repos.files.claimDue({
      now: iso(0),
      abandonedBefore: iso(-DAY),
      leaseUntil: iso(300_000),
      limit: 100,
    });
    expect(again).toEqual([]);
    // The limit bounds one claim.
    await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) });
    expect(
      await t.repos.files.claimDue({ now: iso(0), abandonedBefore: iso(-DAY), leaseUntil: iso(300_000), limit: 2 }),
    ).toHaveLength(2);
  });

  it('counts the files of a binding that are not deleted', async () => {
    await insertFile();
    await insertFile({ status: 'pending' });
    await insertFile({ status: 'deleted' });
    expect(await t.repos.files.countUndeletedInBinding(bindingId)).toBe(2);
  });

  it('gives each due file to one sweeper when two coordinators sweep at once', async () => {
    const due = [];
    for (let i = 0; i < 6; i++) due.push((await insertFile({ cleanupRule: 'ttl', expiresAt: iso(-1) })).id);
    const sweep = { now: iso(0), abandonedBefore: iso(-DAY), leaseUntil: iso(300_000), limit: 4 };
    const [a, b] = await Promise.all([t.repos.files.claimDue(sweep), t.other.files.claimDue(sweep)]);
    const claimed = [...a, ...b].map((x) => x.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    const rest = await t.repos.files.claimDue(sweep);
    expect([...claimed, ...rest.map((x) => x.id)].sort()).toEqual(due.sort());
  });
});
