import { CHAT_PROVIDERS } from '../../../domain/model/triggers.js';
import type { FastifyInstance } from 'fastify';
import { userAction } from '../../../domain/audit/audit-log.js';
import {
  createApp,
  deleteApp,
  findApp,
  updateApp,
  type AppChange,
  type CreateAppInput,
} from '../../../domain/ota/apps.js';
import { channelSchema, slugSchema, workflowNameSchema } from '../../../domain/ota/inputs.js';
import { previewWindow, type MaintenanceWindowInput } from '../../../domain/ota/maintenance-window.js';
import { toAppView } from '../../../domain/ota/views.js';
import { requireOrgRole } from '../../auth/session.js';
import { errorResponses, NO_WHITESPACE_PATTERN, orgParams } from '../../schemas/common.js';
import { noContent, noQuery } from '../../schemas/management.js';
import {
  AppSchema,
  AppUpdateSchema,
  appParams,
  deviceSelectorSchema,
  maintenanceWindowBody,
  releaseKeyRotationBody,
  releaseKeysBody,
  WindowPreviewSchema,
  windowFields,
  type AppParams,
} from './ota-schemas.js';
import { listOf } from '../../schemas/examples.js';

/**
 * OTA applications of an organization (docs/ota.md;
 * docs/ota.md). Any member lists, reads, creates and changes them; deleting one is for owners.
 */

const chatId = { type: 'string', minLength: 1, maxLength: 128, pattern: NO_WHITESPACE_PATTERN } as const;

export async function appRoutes(app: FastifyInstance): Promise<void> {
  const { ctx } = app;
  const { audit } = ctx;
  const now = () => ctx.clock.now();

  app.get<{ Params: { orgId: string } }>(
    '/orgs/:orgId/apps',
    {
      schema: {
        operationId: 'listApps',
        summary: "List the organization's applications, oldest first",
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        response: { 200: listOf(AppSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return (await ctx.repos.applications.listByOrg(orgId)).map((a) => toAppView(a, now()));
    },
  );

  app.post<{ Params: { orgId: string }; Body: CreateAppInput }>(
    '/orgs/:orgId/apps',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'createApp',
        summary: 'Create an application (its slug is unique within the organization)',
        tags: ['dashboard'],
        params: orgParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['slug', 'updateWorkflowName'],
          examples: [{ slug: 'kiosk', updateWorkflowName: 'install-kiosk', defaultChannel: 'stable' }],
          properties: {
            slug: slugSchema,
            updateWorkflowName: workflowNameSchema,
            defaultChannel: { ...channelSchema, description: 'default `stable`' },
            releaseKeys: releaseKeysBody,
          },
        },
        response: { 201: AppSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const caller = await requireOrgRole(request, request.params.orgId);
      const created = await createApp(ctx, caller.orgId, request.body);
      await audit.record(
        userAction(caller, 'app.create', 'application', created.id, {
          slug: created.slug,
          updateWorkflowName: created.updateWorkflowName,
          defaultChannel: created.defaultChannel,
          ...(created.releaseKeys ? { releaseKeys: created.releaseKeys } : {}),
        }),
      );
      return reply.code(201).send(toAppView(created, now()));
    },
  );

  app.get<{ Params: AppParams }>(
    '/orgs/:orgId/apps/:appId',
    {
      schema: {
        operationId: 'getApp',
        summary: 'Read an application',
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        response: { 200: AppSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { orgId } = await requireOrgRole(request, request.params.orgId);
      return toAppView(await findApp(ctx, orgId, request.params.appId), now());
    },
  );

  app.patch<{ Params: AppParams; Body: AppChange }>(
    '/orgs/:orgId/apps/:appId',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'updateApp',
        summary:
          "Change an application's update workflow, default channel, maintenance window and/or chat channel, and set or remove its device group (a label selector)",
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            updateWorkflowName: workflowNameSchema,
            defaultChannel: channelSchema,
            notify: {
              type: ['object', 'null'],
              additionalProperties: false,
              required: ['provider', 'teamId', 'channelId'],
              description:
                'where a rollout that pauses by itself posts (a Slack workspace or Discord server connected to the organization, docs/chat.md); null: nowhere',
              properties: {
                provider: { type: 'string', enum: CHAT_PROVIDERS },
                teamId: { ...chatId, description: 'the Slack workspace id (T...) or the Discord server id' },
                channelId: { ...chatId, description: "the channel id: Slack's C..., Discord's numeric id" },
              },
            },
            deviceSelector: deviceSelectorSchema,
            maintenanceWindow: maintenanceWindowBody,
            releaseKeys: {
              ...releaseKeysBody,
              description: `${releaseKeysBody.description}; only on an application without keys (409 otherwise: rotate them)`,
            },
            releaseKeyRotation: releaseKeyRotationBody,
          },
          examples: [
            { defaultChannel: 'beta' },
            { deviceSelector: 'role=kiosk,site in (berlin,munich)' },
            { maintenanceWindow: { cron: '0 2 * * *', timezone: 'Europe/Berlin', durationMinutes: 120 } },
            { maintenanceWindow: null },
            { notify: { provider: 'slack', teamId: 'T0123', channelId: 'C0456' } },
          ],
        },
        response: { 200: AppUpdateSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const caller = await requireOrgRole(request, request.params.orgId);
      const {
        app: updated,
        changed,
        before,
        deviceGroup,
      } = await updateApp(ctx, caller, request.params.appId, request.body);
      if (changed.length > 0) {
        const window = changed.includes('maintenanceWindow')
          ? { maintenanceWindow: { from: before.maintenanceWindow, to: updated.maintenanceWindow } }
          : {};
        const group = changed.includes('deviceSelector') ? { deviceSelector: updated.deviceSelector, deviceGroup } : {};
        const keys = changed.includes('releaseKeys')
          ? {
              releaseKeys: { from: before.releaseKeys, to: updated.releaseKeys },
              releaseKeyGeneration: updated.releaseKeyRotations.at(-1)?.generation ?? 0,
            }
          : {};
        await audit.record(
          userAction(caller, 'app.update', 'application', updated.id, {
            slug: updated.slug,
            changed,
            ...window,
            ...group,
            ...keys,
          }),
        );
      }
      return { ...toAppView(updated, now()), deviceGroup };
    },
  );

  app.get<{ Params: { orgId: string }; Querystring: MaintenanceWindowInput }>(
    '/orgs/:orgId/maintenance-windows/preview',
    {
      schema: {
        operationId: 'previewMaintenanceWindow',
        summary: 'The next windows a maintenance window would open, checked as a PATCH of an application checks it',
        tags: ['dashboard'],
        params: orgParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          required: ['cron', 'timezone', 'durationMinutes'],
          properties: windowFields,
        },
        response: { 200: WindowPreviewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      await requireOrgRole(request, request.params.orgId);
      return previewWindow(request.query, 'querystring', now());
    },
  );

  app.delete<{ Params: AppParams }>(
    '/orgs/:orgId/apps/:appId',
    {
      config: { action: 'apps.delete' },
      schema: {
        operationId: 'deleteApp',
        summary: 'Delete an application with its releases and device bindings (owner)',
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        response: { 204: noContent, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const caller = await requireOrgRole(request, request.params.orgId);
      const deleted = await deleteApp(ctx, caller.orgId, request.params.appId);
      await audit.record(userAction(caller, 'app.delete', 'application', deleted.id, { slug: deleted.slug }));
      return reply.code(204).send();
    },
  );
}
