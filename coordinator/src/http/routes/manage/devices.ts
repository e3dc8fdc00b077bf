import { DEVICE_STATES, type DeviceState } from '@drover/shared';
import type { FastifyInstance } from 'fastify';
import { userAction, type UserActor } from '../../../domain/audit/audit-log.js';
import type { AuditAction } from '../../../domain/model/audit.js';
import {
  bindDevices,
  bindingViews,
  changeChannel,
  findBinding,
  reconcileDevice,
  unbindDevice,
} from '../../../domain/ota/devices.js';
import { deviceSelectorFrom } from '../../../domain/ota/device-group-rule.js';
import { deviceCounts, listDevices, previewDeviceGroup } from '../../../domain/ota/device-list.js';
import { channelSchema, MAX_BIND_AGENTS } from '../../../domain/ota/inputs.js';
import { MAX_NAME_LENGTH } from '../../../domain/names.js';
import {
  countedPageResponse,
  cursorQueryProperty,
  NEXT_CURSOR_HEADER,
  parseCursor,
  TOTAL_COUNT_HEADER,
} from '../../pagination.js';
import { emptyBody, errorResponses, selectorSchema, uuid } from '../../schemas/common.js';
import { noContent, noQuery } from '../../schemas/management.js';
import { requireAppAccess } from './ota-access.js';
import {
  appParams,
  BindingSchema,
  DeviceCountSchema,
  DeviceGroupPreviewSchema,
  deviceParams,
  type AppParams,
  type DeviceParams,
} from './ota-schemas.js';
import { listOf } from '../../schemas/examples.js';
import { EXAMPLE_IDS } from '../../schemas/examples.js';

/** The most devices a page of the list holds. */
export const DEVICES_MAX_LIMIT = 500;
/** The most agents the list is narrowed to at once (`agentId`). */
export const DEVICES_MAX_AGENTS = 200;

interface DeviceListQuery {
  channel?: string;
  state?: DeviceState | 'none';
  q?: string;
  agentId?: string[];
  limit?: number;
  cursor?: string;
}

/**
 * Device bindings of an application (docs/ota.md): bind agents,
 * list, read, change channel, unbind, reconcile. Any member may do all of it.
 */

export async function deviceRoutes(app: FastifyInstance): Promise<void> {
  const { ctx } = app;

  const record = (caller: UserActor, action: AuditAction, targetId: string, metadata: Record<string, unknown>) =>
    ctx.audit.record(userAction(caller, action, 'device_binding', targetId, metadata));

  app.get<{ Params: AppParams; Querystring: DeviceListQuery }>(
    '/orgs/:orgId/apps/:appId/devices',
    {
      schema: {
        operationId: 'listDevices',
        summary:
          "List an application's device bindings with their current and desired releases, in bind order: those a channel, a state, a text and a list of agents match; in pages with `limit`",
        tags: ['dashboard'],
        params: appParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            channel: { ...channelSchema, description: 'Only the devices on this channel' },
            state: {
              type: 'string',
              enum: [...DEVICE_STATES, 'none'],
              description: 'Only the devices in this state; `none`: those that never reported one',
            },
            q: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_NAME_LENGTH,
              description: "Only the devices whose agent's name or hostname holds this text, in any case",
              examples: ['kiosk'],
            },
            agentId: {
              type: 'array',
              items: uuid,
              minItems: 1,
              maxItems: DEVICES_MAX_AGENTS,
              description: `Only the devices of these agents (the parameter once for each, up to ${DEVICES_MAX_AGENTS})`,
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: DEVICES_MAX_LIMIT,
              description: `At most this many devices, the next page's cursor in ${NEXT_CURSOR_HEADER} when more match; without it, every device that matches`,
            },
            cursor: cursorQueryProperty,
          },
        },
        response: { 200: countedPageResponse(BindingSchema, 'devices'), ...errorResponses(401, 404, 422) },
      },
    },
    async (request, reply) => {
      const { application } = await requireAppAccess(request);
      const { channel, state, q, agentId, limit, cursor } = request.query;
      const page = await listDevices(ctx, application, {
        ...(channel === undefined ? {} : { channel }),
        ...(state === undefined ? {} : { state }),
        ...(q === undefined ? {} : { text: q }),
        ...(agentId === undefined ? {} : { agentIds: agentId.map((id) => id.toLowerCase()) }),
        ...(cursor === undefined ? {} : { after: parseCursor(cursor) }),
        ...(limit === undefined ? {} : { limit }),
      });
      void reply.header(TOTAL_COUNT_HEADER, String(page.matching));
      if (page.next !== null) void reply.header(NEXT_CURSOR_HEADER, String(page.next));
      return page.devices;
    },
  );

  app.get<{ Params: AppParams }>(
    '/orgs/:orgId/apps/:appId/device-counts',
    {
      schema: {
        operationId: 'countDevices',
        summary:
          "Count an application's devices by channel, origin, current and desired release, update under way and state: what release counts and the impact of a publish or a yank are worked out from",
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        response: { 200: listOf(DeviceCountSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      return deviceCounts(ctx, application);
    },
  );

  app.get<{ Params: AppParams; Querystring: { selector: string } }>(
    '/orgs/:orgId/apps/:appId/device-group/preview',
    {
      schema: {
        operationId: 'previewDeviceGroup',
        summary: "What setting a device selector as the application's device group would do now (nothing is changed)",
        tags: ['dashboard'],
        params: appParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          required: ['selector'],
          properties: {
            selector: selectorSchema('A label selector (docs/fleets.md)', { examples: ['role=kiosk,site=berlin'] }),
          },
        },
        response: { 200: DeviceGroupPreviewSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      const selector = deviceSelectorFrom(request.query.selector, 'querystring.selector', false);
      return previewDeviceGroup(ctx, application, selector!);
    },
  );

  app.post<{ Params: AppParams; Body: { agentIds: string[]; channel?: string } }>(
    '/orgs/:orgId/apps/:appId/devices',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'bindDevice',
        summary: 'Bind agents to the application (all or none); each is evaluated at once',
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['agentIds'],
          examples: [{ agentIds: [EXAMPLE_IDS.agent], channel: 'stable' }],
          properties: {
            // Distinct ids, checked by bindDevices (not `uniqueItems`): an id listed twice, in any case,
            // is a detail at its index beside the other unusable ones.
            agentIds: {
              type: 'array',
              minItems: 1,
              maxItems: MAX_BIND_AGENTS,
              items: uuid,
              description: 'distinct agent ids (an id listed twice is refused at its index)',
            },
            channel: { ...channelSchema, description: "default: the application's default channel" },
          },
        },
        response: { 201: listOf(BindingSchema), ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { application, ...caller } = await requireAppAccess(request);
      const views = await bindDevices(ctx, application, request.body.agentIds, request.body.channel);
      await Promise.all(
        views.map((v) =>
          record(caller, 'device.bind', v.id, {
            applicationId: application.id,
            agentId: v.agentId,
            channel: v.channel,
          }),
        ),
      );
      return reply.code(201).send(views);
    },
  );

  app.get<{ Params: DeviceParams }>(
    '/orgs/:orgId/apps/:appId/devices/:deviceId',
    {
      schema: {
        operationId: 'getDevice',
        summary: 'Read a device binding',
        tags: ['dashboard'],
        params: deviceParams,
        querystring: noQuery,
        response: { 200: BindingSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      const binding = await findBinding(ctx, application, request.params.deviceId);
      const [view] = await bindingViews(ctx, application, [binding]);
      return view;
    },
  );

  app.patch<{ Params: DeviceParams; Body: { channel: string } }>(
    '/orgs/:orgId/apps/:appId/devices/:deviceId',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'updateDevice',
        summary: "Change a binding's channel; it is re-evaluated at once",
        tags: ['dashboard'],
        params: deviceParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['channel'],
          properties: { channel: channelSchema },
          examples: [{ channel: 'beta' }],
        },
        response: { 200: BindingSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { application, ...caller } = await requireAppAccess(request);
      const { view, from } = await changeChannel(ctx, application, request.params.deviceId, request.body.channel);
      if (from !== view.channel) {
        await record(caller, 'device.update', view.id, {
          applicationId: application.id,
          agentId: view.agentId,
          channel: { from, to: view.channel },
        });
      }
      return view;
    },
  );

  app.delete<{ Params: DeviceParams }>(
    '/orgs/:orgId/apps/:appId/devices/:deviceId',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'unbindDevice',
        summary: 'Remove a device binding (a pending update job of it is cancelled)',
        tags: ['dashboard'],
        params: deviceParams,
        querystring: noQuery,
        response: { 204: noContent, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request, reply) => {
      const { application, ...caller } = await requireAppAccess(request);
      const removed = await unbindDevice(ctx, application, request.params.deviceId);
      await record(caller, 'device.unbind', removed.id, {
        applicationId: application.id,
        agentId: removed.agentId,
      });
      return reply.code(204).send();
    },
  );

  app.post<{ Params: DeviceParams }>(
    '/orgs/:orgId/apps/:appId/devices/:deviceId/reconcile',
    {
      config: { action: 'apps.edit' },
      schema: {
        operationId: 'reconcileDevice',
        summary: 'Re-evaluate a binding now (failures and postponement forgotten); answers the binding',
        tags: ['dashboard'],
        params: deviceParams,
        querystring: noQuery,
        body: emptyBody,
        response: { 200: BindingSchema, ...errorResponses(401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { application, ...caller } = await requireAppAccess(request);
      const view = await reconcileDevice(ctx, application, request.params.deviceId);
      await record(caller, 'device.reconcile', view.id, {
        applicationId: application.id,
        agentId: view.agentId,
        activeJobId: view.activeJobId,
      });
      return view;
    },
  );
}
