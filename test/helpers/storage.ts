import { createHash } from 'node:crypto';
import http from 'node:http';
import type { TestCoordinator } from './coordinator.js';
import type { ApiClient } from './http.js';
import { issueApiToken, type Grant } from './tokens.js';

export type StoragePermission = 'read' | 'write' | 'delete';

/** The organization's default (bootstrap) storage binding id. */
export async function defaultBindingId(t: TestCoordinator): Promise<string> {
  const res = await t.owner.get<{ id: string; isDefault: boolean }[]>(`/orgs/${t.orgId}/storage-bindings`);
  const binding = res.body.find((b) => b.isDefault);
  if (!binding) throw new Error('no default storage binding');
  return binding.id;
}

/** A client carrying a new API token with one storage grant. */
export async function storageClient(
  t: TestCoordinator,
  bindingIds: string[] | null,
  permissions: StoragePermission[],
  extra: Grant[] = [],
): Promise<ApiClient> {
  const issued = await issueApiToken(t.owner, t.orgId, [{ type: 'storage', bindingIds, permissions }, ...extra]);
  return t.api.withToken(issued.token);
}

/** The keys of file metadata (storage API answers), sorted: nothing internal is ever among them. */
export const FILE_FIELDS = [
  'bindingId',
  'cleanupRule',
  'contentType',
  'createdAt',
  'deletedAt',
  'expiresAt',
  'filename',
  'id',
  'size',
  'status',
];

export const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

export interface PresignedUpload {
  fileId: string;
  uploadUrl: string;
  method: 'PUT';
  headers: Record<string, string>;
  expiresInSeconds: number;
}

/** presign-upload (201 expected), PUT of `data`, complete: the file's metadata. */
export async function uploadFile(
  client: ApiClient,
  data: Uint8Array | string,
  presign: Record<string, unknown> = { cleanupRule: 'persistent' },
): Promise<{ fileId: string; file: any; upload: PresignedUpload }> {
  const res = await client.post<PresignedUpload>('/storage/files/presign-upload', { body: presign });
  if (res.status !== 201) throw new Error(`presign-upload: ${res.status} ${res.text}`);
  const put = await fetch(res.body.uploadUrl, { method: 'PUT', headers: res.body.headers, body: data });
  if (put.status !== 200) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  const done = await client.post(`/storage/files/${res.body.fileId}/complete`);
  if (done.status !== 200) throw new Error(`complete: ${done.status} ${done.text}`);
  return { fileId: res.body.fileId, file: done.body, upload: res.body };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

/**
 * A request with node:http, as curl would send it: the body written in chunks (chunked transfer
 * encoding unless `content-length` is given), the answer read whole. A server that answers and
 * closes before the body is all sent still yields its answer.
 */
export function rawRequest(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; chunks?: (Buffer | string)[] } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: options.headers });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const body = Buffer.concat(parts);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString()) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    const write = async () => {
      for (const chunk of options.chunks ?? []) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise<void>((r) => req.once('drain', () => r()).once('close', () => r()));
      }
      req.end();
    };
    void write();
  });
}
