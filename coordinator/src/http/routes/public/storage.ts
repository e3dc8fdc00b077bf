import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FileCaller } from '../../../domain/files/access.js';
import { requireStoragePermission, tokenFileCaller } from '../../../domain/files/access.js';
import type { PresignUploadInput } from '../../../domain/files/file-input.js';
import type { StoragePermission } from '../../../domain/model/api-tokens.js';
import { apiCallerOf } from '../../auth/api-token.js';
import { emptyBody, errorResponses, idParams } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import {
  DownloadUrlResponseSchema,
  FileViewSchema,
  ListQuerySchema,
  PresignUploadBodySchema,
  PresignUploadResponseSchema,
} from './storage-schemas.js';
import { pageResponse } from '../../pagination.js';
import { listFilter, sendFilePage, type ListQuery } from './file-list.js';

type IdParams = { Params: { id: string } };

/**
 * The public storage API (docs/storage.md): a token with a storage grant uploads and downloads
 * files through presigned URLs. Thin: the token and its permission are checked before the body
 * (401, then 403), then domain/files does the rest (404 for a file outside the grant, 422, 409).
 * Storage calls count against no rate limit (neither the token's job limits nor the read limit).
 */
export async function storageRoutes(app: FastifyInstance): Promise<void> {
  const callers = new WeakMap<FastifyRequest, FileCaller>();
  const caller = (request: FastifyRequest): FileCaller => callers.get(request)!;
  const requirePermission = (permission: StoragePermission) => async (request: FastifyRequest) => {
    const { token } = apiCallerOf(request);
    const fileCaller = tokenFileCaller(token);
    requireStoragePermission(fileCaller, permission);
    callers.set(request, fileCaller);
  };
  const common = (operationId: string, summary: string, permission: StoragePermission) => ({
    operationId,
    summary: `${summary} (storage grant with \`${permission}\`)`,
    tags: ['public'],
  });
  const files = () => app.ctx.files;

  app.post<{ Body: PresignUploadInput }>(
    '/storage/files/presign-upload',
    {
      onRequest: requirePermission('write'),
      schema: {
        ...common('presignUpload', 'Create a pending file and get its presigned upload URL', 'write'),
        querystring: noQuery,
        body: PresignUploadBodySchema,
        response: { 201: PresignUploadResponseSchema, ...errorResponses(401, 403, 422) },
      },
    },
    async (request, reply) => reply.code(201).send(await files().presignUpload(caller(request), request.body)),
  );

  app.post<IdParams & { Body: null | Record<string, never> }>(
    '/storage/files/:id/complete',
    {
      onRequest: requirePermission('write'),
      schema: {
        ...common('completeUpload', 'Confirm the upload: the file becomes active; no body', 'write'),
        params: idParams('id'),
        querystring: noQuery,
        body: emptyBody,
        response: { 200: FileViewSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => files().complete(caller(request), request.params.id),
  );

  app.get<IdParams>(
    '/storage/files/:id/download-url',
    {
      onRequest: requirePermission('read'),
      schema: {
        ...common('getDownloadUrl', 'A new presigned download URL of an active file', 'read'),
        params: idParams('id'),
        querystring: noQuery,
        response: { 200: DownloadUrlResponseSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => files().downloadUrl(caller(request), request.params.id),
  );

  app.get<IdParams>(
    '/storage/files/:id',
    {
      onRequest: requirePermission('read'),
      schema: {
        ...common('getFile', "A file's metadata", 'read'),
        params: idParams('id'),
        querystring: noQuery,
        response: { 200: FileViewSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => files().get(caller(request), request.params.id),
  );

  app.get<{ Querystring: ListQuery }>(
    '/storage/files',
    {
      onRequest: requirePermission('read'),
      schema: {
        ...common(
          'listFiles',
          "Up to 200 files of the token's bindings, newest first; filters bindingId and status; next page cursor in the x-next-cursor header",
          'read',
        ),
        querystring: ListQuerySchema,
        response: { 200: pageResponse(FileViewSchema, 'files'), ...errorResponses(401, 403, 422) },
      },
    },
    async (request, reply) => sendFilePage(reply, await files().list(caller(request), listFilter(request.query))),
  );

  app.delete<IdParams>(
    '/storage/files/:id',
    {
      onRequest: requirePermission('delete'),
      schema: {
        ...common(
          'deleteFile',
          'Delete a file now; answers its metadata (status deleted, or delete_failed: retried)',
          'delete',
        ),
        params: idParams('id'),
        querystring: noQuery,
        response: { 200: FileViewSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const token = caller(request);
      const file = await files().delete(token, request.params.id);
      await app.ctx.audit.record({
        orgId: token.orgId,
        actorType: 'api_token',
        actorId: token.tokenId,
        action: 'file.delete',
        targetType: 'file',
        targetId: file.id,
        metadata: { bindingId: file.bindingId, status: file.status },
      });
      return file;
    },
  );
}
