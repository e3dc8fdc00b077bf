import type { FastifyInstance } from 'fastify';
import { memberFileCaller } from '../../../domain/files/access.js';
import type { PresignUploadInput } from '../../../domain/files/file-input.js';
import { userAction } from '../../../domain/audit/audit-log.js';
import { requireOrgRole } from '../../auth/session.js';
import { emptyBody, errorResponses, idParams, orgParams } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import {
  DownloadUrlResponseSchema,
  FileViewSchema,
  ListQuerySchema,
  PresignUploadBodySchema,
  PresignUploadResponseSchema,
} from '../public/storage-schemas.js';
import { pageResponse } from '../../pagination.js';
import { listFilter, sendFilePage, type ListQuery } from '../public/file-list.js';

const fileParams = idParams('orgId', 'fileId');
type FileParams = { Params: { orgId: string; fileId: string } };
type OrgParams = { Params: { orgId: string } };

/**
 * Stored files for members of the organization (docs/storage.md, "Files in the dashboard"): the
 * public storage API's calls with a session instead of a token. A member may use every binding
 * of the organization with every permission; the same file service keeps the rules (404 for a
 * file of another organization or a deleted binding, 409 for a state that forbids the call).
 */
export async function fileRoutes(app: FastifyInstance): Promise<void> {
  const files = () => app.ctx.files;
  const member = async (request: Parameters<typeof requireOrgRole>[0], orgId: string) => {
    const access = await requireOrgRole(request, orgId);
    return { access, caller: memberFileCaller(access.orgId, access.userId) };
  };
  const common = (operationId: string, summary: string) => ({ operationId, summary, tags: ['dashboard'] });

  app.get<OrgParams & { Querystring: ListQuery }>(
    '/orgs/:orgId/files',
    {
      schema: {
        ...common(
          'listOrgFiles',
          'Up to 200 files of the organization, newest first; filters bindingId and status; next page cursor in the x-next-cursor header',
        ),
        params: orgParams,
        querystring: ListQuerySchema,
        response: { 200: pageResponse(FileViewSchema, 'files'), ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const { caller } = await member(request, request.params.orgId);
      return sendFilePage(reply, await files().list(caller, listFilter(request.query)));
    },
  );

  app.post<OrgParams & { Body: PresignUploadInput }>(
    '/orgs/:orgId/files/presign-upload',
    {
      config: { action: 'files.write' },
      schema: {
        ...common('presignOrgUpload', 'Create a pending file and get its presigned upload URL'),
        params: orgParams,
        querystring: noQuery,
        body: PresignUploadBodySchema,
        response: { 201: PresignUploadResponseSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const { caller } = await member(request, request.params.orgId);
      return reply.code(201).send(await files().presignUpload(caller, request.body));
    },
  );

  app.post<FileParams & { Body: null | Record<string, never> }>(
    '/orgs/:orgId/files/:fileId/complete',
    {
      config: { action: 'files.write' },
      schema: {
        ...common('completeOrgUpload', 'Confirm the upload: the file becomes active; no body'),
        params: fileParams,
        querystring: noQuery,
        body: emptyBody,
        response: { 200: FileViewSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { caller } = await member(request, request.params.orgId);
      return files().complete(caller, request.params.fileId);
    },
  );

  app.get<FileParams>(
    '/orgs/:orgId/files/:fileId/download-url',
    {
      schema: {
        ...common('getOrgFileDownloadUrl', 'A new presigned download URL of an active file'),
        params: fileParams,
        querystring: noQuery,
        response: { 200: DownloadUrlResponseSchema, ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request) => {
      const { caller } = await member(request, request.params.orgId);
      return files().downloadUrl(caller, request.params.fileId);
    },
  );

  app.get<FileParams>(
    '/orgs/:orgId/files/:fileId',
    {
      schema: {
        ...common('getOrgFile', "A file's metadata"),
        params: fileParams,
        querystring: noQuery,
        response: { 200: FileViewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { caller } = await member(request, request.params.orgId);
      return files().get(caller, request.params.fileId);
    },
  );

  app.delete<FileParams>(
    '/orgs/:orgId/files/:fileId',
    {
      config: { action: 'files.write' },
      schema: {
        ...common(
          'deleteOrgFile',
          'Delete a file now; answers its metadata (status deleted, or delete_failed: retried)',
        ),
        params: fileParams,
        querystring: noQuery,
        response: { 200: FileViewSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { access, caller } = await member(request, request.params.orgId);
      const file = await files().delete(caller, request.params.fileId);
      await app.ctx.audit.record(
        userAction(access, 'file.delete', 'file', file.id, { bindingId: file.bindingId, status: file.status }),
      );
      return file;
    },
  );
}
