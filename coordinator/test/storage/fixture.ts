import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { FileRepository, StoredFile } from '../../src/domain/model/files.js';
import type { StorageBindingRepository } from '../../src/domain/model/storage-bindings.js';
import type { Config } from '../../src/config/config.js';
import { loadConfig } from '../../src/config/config.js';
import { createFileService } from '../../src/domain/files/create.js';
import type { FileService } from '../../src/domain/files/file-service.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import { newId } from '../../src/util/ids.js';

/** A migrated in-memory database with one organization and its default local binding. */
export interface FilesFixture {
  db: Db;
  files: FileRepository;
  bindings: StorageBindingRepository;
  orgId: string;
  bindingId: string;
  dataDir: string;
  clock: { now(): number; advance(ms: number): void };
  config: Config;
  service: FileService;
  warnings: object[];
  addBinding(name: string, backend?: 'local' | 's3'): Promise<string>;
  /** The organization's default binding from now on: a bucket at `endpoint` (s3rver's keys). */
  addDefaultBucket(endpoint: string, bucket: string): Promise<string>;
  /**
   * The file service of a second coordinator on the same database and disk, whose reads of a file
   * go through `look` (the how-manyth look at that file, from 1, and the read it would make): to
   * run this one's work between two of its steps, or answer what it read before.
   */
  otherCoordinator(
    look: (n: number, read: () => Promise<StoredFile | null>) => Promise<StoredFile | null>,
  ): Promise<FileService>;
  /** A file row with sensible defaults. */
  insertFile(fields?: Partial<StoredFile>): Promise<StoredFile>;
  close(): void;
}

export const T0 = Date.parse('2026-03-01T12:00:00.000Z');

export async function filesFixture(env: Record<string, string> = {}): Promise<FilesFixture> {
  const db = openDatabase(':memory:');
  migrate(db);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-files-'));
  let now = T0;
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  const { files, storageBindings: bindings, serverSecrets } = createSqliteRepositories(db);
  const orgId = newId();
  db.prepare('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)').run(orgId, 'acme', new Date(T0).toISOString());
  const addBinding = async (
    name: string,
    backend: 'local' | 's3' = 'local',
    isDefault = false,
    bucket: { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string } = {
      endpoint: 'http://127.0.0.1:9',
      bucket: 'team-bucket',
      accessKeyId: 'AKIA0',
      secretAccessKey: 'secret',
    },
  ) => {
    const id = newId();
    const config = backend === 's3' ? { ...bucket, region: 'eu-west-1', forcePathStyle: true } : {};
    await bindings.insert({ id, orgId, name, backend, config, isDefault, createdAt: new Date(now).toISOString() });
    return id;
  };
  const bindingId = await addBinding('local', 'local', true);
  const config = loadConfig({ DROVER_PUBLIC_URL: 'https://drover.example.test', ...env }, { dataDir });
  const warnings: object[] = [];
  const fileService = (repository: FileRepository) =>
    createFileService({
      repos: { files: repository, storageBindings: bindings, serverSecrets },
      clock,
      dataDir,
      storage: config.storage,
      config: () => config,
      logger: { warn: (obj) => void warnings.push(obj) },
    });
  const service = await fileService(files);
  const otherCoordinator = (
    look: (n: number, read: () => Promise<StoredFile | null>) => Promise<StoredFile | null>,
  ) => {
    let looks = 0;
    return fileService({ ...files, findInOrg: (id, fileId) => look(++looks, () => files.findInOrg(id, fileId)) });
  };
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
      createdAt: new Date(now).toISOString(),
      completedAt: new Date(now).toISOString(),
      uploadExpiresAt: new Date(now + 900_000).toISOString(),
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
    await files.insert(file);
    return file;
  };
  return {
    db,
    files,
    bindings,
    orgId,
    bindingId,
    dataDir,
    clock,
    config,
    service,
    warnings,
    addBinding: (name, backend) => addBinding(name, backend),
    addDefaultBucket: async (endpoint, bucket) => {
      db.prepare('UPDATE storage_bindings SET is_default = 0 WHERE org_id = ?').run(orgId);
      return addBinding(bucket, 's3', true, { endpoint, bucket, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    },
    otherCoordinator,
    insertFile,
    close: () => {
      db.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A release row referencing `fileId`. */
export function insertRelease(db: Db, orgId: string, fileId: string, status: 'draft' | 'published' | 'yanked'): string {
  const appId = newId();
  const id = newId();
  const at = new Date(T0).toISOString();
  db.prepare(
    `INSERT INTO applications (id, org_id, slug, update_workflow_name, created_at) VALUES (?, ?, ?, 'update', ?)`,
  ).run(appId, orgId, `app-${appId.slice(0, 8)}`, at);
  db.prepare(
    `INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status, artifact_file_id,
       checksum_sha256, size, created_at)
     VALUES (?, ?, '1', 1, 'stable', 'optional', ?, ?, ?, 1, ?)`,
  ).run(id, appId, status, fileId, 'a'.repeat(64), at);
  return id;
}
