import type { FastifyInstance } from 'fastify';
import type { StorageBinding } from '../../../domain/model/storage-bindings.js';
import { userAction } from '../../../domain/audit/audit-log.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import {
  auditableSettings,
  createStorageBinding,
  deleteStorageBinding,
  STORAGE_BACKENDS,
  type StorageBindingInput,
} from '../../../domain/files/storage-bindings.js';
import { notFound } from '../../../errors.js';
import { isoNow } from '../../../util/clock.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, idParams, orgParams } from '../../schemas/common.js';
import { noQuery, StorageBindingSchema } from '../../schemas/management.js';
import { listOf } from '../../schemas/examples.js';

const bindingParams = idParams('orgId', 'bindingId');
type BindingParams = { orgId: string; bindingId: string };
const setting = { type: 'string', minLength: 1, maxLength: 2048 } as const;

/** What a binding looks like to the dashboard: never its config (which holds secrets). */
const toView = (b: StorageBinding) => ({
  id: b.id,
  name: b.name,
  backend: b.backend,
  isDefault: b.isDefault,
  createdAt: b.createdAt,
});

/**
 * Storage bindings: members list and read them; owners create and delete them. The backend
 * settings of the body sit beside `name` and `backend`; they are checked per backend in
 * domain/files/storage-bindings.ts and never returned.
 */
export async function storageBindingRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/storage-bindings',
    {
      schema: {
        operationId: 'listStorageBindings',
        summary: 'List the storage bindings of an organization, oldest first',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(StorageBindingSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return (await app.ctx.repos.storageBindings.listByOrg(orgId)).map(toView);
    },
  );

  app.post<{ Params: { orgId: string }; Body: StorageBindingInput }>(
    '/orgs/:orgId/storage-bindings',
    {
      config: { action: 'storage.bindings' },
      schema: {
        operationId: 'createStorageBinding',
        summary: 'Create a storage binding (owner): backend local (no settings) or s3 (endpoint, bucket, region, keys)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'backend'],
          examples: [
            {
              name: 'artifacts',
              backend: 's3',
              endpoint: 'https://s3.eu-west-1.amazonaws.com',
              bucket: 'acme-artifacts',
              region: 'eu-west-1',
              accessKeyId: 'AKIAEXAMPLE',
              secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
            },
          ],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH },
            backend: { type: 'string', enum: STORAGE_BACKENDS },
            endpoint: { ...setting, description: 's3: http(s) URL of the S3-compatible service' },
            bucket: { ...setting, description: 's3: bucket name' },
            region: { ...setting, description: 's3: region, e.g. us-east-1' },
            accessKeyId: { ...setting, description: 's3: access key id' },
            secretAccessKey: { ...setting, description: 's3: secret access key; stored, never returned' },
            forcePathStyle: { type: 'boolean', description: 's3: path-style URLs (default false)' },
          },
        },
        response: { 201: StorageBindingSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const caller = await requireOrgRole(request, request.params.orgId);
      const binding = await createStorageBinding(
        app.ctx.repos,
        caller.orgId,
        request.body,
        isoNow(app.ctx.clock),
        app.ctx.config.storageAllowedHosts,
      );
      await app.ctx.audit.record(
        userAction(caller, 'storage_binding.create', 'storage_binding', binding.id, {
          name: binding.name,
          backend: binding.backend,
          ...auditableSettings(binding),
        }),
      );
      return reply.code(201).send(toView(binding));
    },
  );

  app.get<{ Params: BindingParams }>(
    '/orgs/:orgId/storage-bindings/:bindingId',
    {
      schema: {
        operationId: 'getStorageBinding',
        summary: 'A storage binding of the organization (no settings)',
        tags: ['dashboard'],
        params: bindingParams,
        querystring: noQuery,
        response: { 200: StorageBindingSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      const binding = await app.ctx.repos.storageBindings.findInOrg(orgId, request.params.bindingId);
      if (!binding) throw notFound('Storage binding');
      return toView(binding);
    },
  );

  app.delete<{ Params: BindingParams }>(
    '/orgs/:orgId/storage-bindings/:bindingId',
    {
      config: { action: 'storage.bindings' },
      schema: {
        operationId: 'deleteStorageBinding',
        summary:
          "Delete a storage binding (owner); answers it as it was; the organization's default binding cannot be deleted",
        tags: ['dashboard'],
        params: bindingParams,
        querystring: noQuery,
        response: { 200: StorageBindingSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
      const binding = await deleteStorageBinding(app.ctx.repos, orgId, request.params.bindingId, isoNow(app.ctx.clock));
      const metadata = { name: binding.name, backend: binding.backend };
      await app.ctx.audit.record(
        userAction({ orgId, userId }, 'storage_binding.delete', 'storage_binding', binding.id, metadata),
      );
      return toView(binding);
    },
  );
}
