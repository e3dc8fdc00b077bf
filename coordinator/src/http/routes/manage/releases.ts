import type { FastifyInstance } from 'fastify';
import type { AuditAction } from '../../../domain/model/audit.js';
import {
  type DraftPatch,
  type Release,
  RELEASE_STATUSES,
  UPDATE_POLICIES,
  type ReleaseStatus,
} from '../../../domain/model/releases.js';
import { userAction, type AuditRecord, type UserActor } from '../../../domain/audit/audit-log.js';
import { channelSchema, notesSchema, versionSchema } from '../../../domain/ota/inputs.js';
import { createRelease, findRelease, updateDraft, type CreateReleaseInput } from '../../../domain/ota/releases.js';
import { checkRolloutPlan } from '../../../domain/ota/rollout-rules.js';
import { AppError } from '../../../errors.js';
import { toReleaseView } from '../../../domain/ota/views.js';
import { emptyBody, errorResponses, uuid } from '../../schemas/common.js';
import { noQuery } from '../../schemas/management.js';
import { requireAppAccess } from './ota-access.js';
import { appParams, ReleaseSchema, releaseParams, type AppParams, type ReleaseParams } from './ota-schemas.js';
import { PublishBodySchema, type PublishBody } from './rollout-schemas.js';
import { listOf } from '../../schemas/examples.js';
import { EXAMPLE_IDS } from '../../schemas/examples.js';

/**
 * Releases of an application (docs/ota.md). Any member creates,
 * publishes and yanks them. A release is created as a draft; publishing re-evaluates the
 * devices of its channel; a published release is immutable.
 */

const policy = { type: 'string', enum: UPDATE_POLICIES } as const;

export async function releaseRoutes(app: FastifyInstance): Promise<void> {
  const { ctx } = app;

  const audited = (caller: UserActor, release: Release, action: AuditAction, metadata = {}): AuditRecord =>
    userAction(caller, action, 'release', release.id, {
      applicationId: release.applicationId,
      version: release.version,
      sequence: release.sequence,
      channel: release.channel,
      ...metadata,
    });

  app.get<{ Params: AppParams; Querystring: { channel?: string; status?: ReleaseStatus } }>(
    '/orgs/:orgId/apps/:appId/releases',
    {
      schema: {
        operationId: 'listReleases',
        summary: "List an application's releases, highest sequence first",
        tags: ['dashboard'],
        params: appParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { channel: channelSchema, status: { type: 'string', enum: RELEASE_STATUSES } },
        },
        response: { 200: listOf(ReleaseSchema), ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      const { channel, status } = request.query;
      return (await ctx.repos.releases.list(application.id, { channel, status })).map(toReleaseView);
    },
  );

  app.post<{ Params: AppParams; Body: CreateReleaseInput }>(
    '/orgs/:orgId/apps/:appId/releases',
    {
      config: { action: 'releases.publish' },
      schema: {
        operationId: 'createRelease',
        summary: 'Create a draft release of an artifact (a persistent, active stored file)',
        tags: ['dashboard'],
        params: appParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['version', 'artifactFileId'],
          examples: [
            { version: '2.4.0', artifactFileId: EXAMPLE_IDS.file, channel: 'stable', notes: 'Faster start-up' },
          ],
          properties: {
            version: versionSchema,
            artifactFileId: uuid,
            channel: { ...channelSchema, description: "default: the application's default channel" },
            updatePolicy: { ...policy, description: 'default `optional`' },
            notes: notesSchema,
            sequence: {
              type: 'integer',
              minimum: 1,
              maximum: Number.MAX_SAFE_INTEGER,
              description:
                'the sequence the release was signed with, greater than every release of the application (409 otherwise); required when the application has release keys, default: the next one',
            },
            signature: {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              description:
                'required when the application has release keys: standard base64 Ed25519 by one of them over the RFC 8785 JSON of {app, version, sequence, sha256, size} (`drover release sign`)',
            },
          },
        },
        response: { 201: ReleaseSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { application, ...caller } = await requireAppAccess(request);
      const release = await createRelease(ctx, application, request.body);
      await ctx.audit.record(
        audited(caller, release, 'release.create', {
          artifactFileId: release.artifactFileId,
          updatePolicy: release.updatePolicy,
          ...(release.signature ? { signed: true } : {}),
        }),
      );
      return reply.code(201).send(toReleaseView(release));
    },
  );

  app.get<{ Params: ReleaseParams }>(
    '/orgs/:orgId/apps/:appId/releases/:releaseId',
    {
      schema: {
        operationId: 'getRelease',
        summary: 'Read a release',
        tags: ['dashboard'],
        params: releaseParams,
        querystring: noQuery,
        response: { 200: ReleaseSchema, ...errorResponses(401, 404, 422) },
      },
    },
    async (request) => {
      const { application } = await requireAppAccess(request);
      return toReleaseView(await findRelease(ctx, application, request.params.releaseId));
    },
  );

  app.patch<{ Params: ReleaseParams; Body: DraftPatch }>(
    '/orgs/:orgId/apps/:appId/releases/:releaseId',
    {
      config: { action: 'releases.publish' },
      schema: {
        operationId: 'updateRelease',
        summary: 'Change a draft release; a published or yanked release is immutable (409)',
        tags: ['dashboard'],
        params: releaseParams,
        querystring: noQuery,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { version: versionSchema, channel: channelSchema, updatePolicy: policy, notes: notesSchema },
          examples: [{ updatePolicy: 'mandatory', notes: 'Fixes the start-up crash' }],
        },
        response: { 200: ReleaseSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { application, ...caller } = await requireAppAccess(request);
      const { release, changed } = await updateDraft(ctx, application, request.params.releaseId, request.body);
      if (changed.length > 0) {
        await ctx.audit.record(audited(caller, release, 'release.update', { changed }));
      }
      return toReleaseView(release);
    },
  );

  app.post<{ Params: ReleaseParams; Body: PublishBody | null }>(
    '/orgs/:orgId/apps/:appId/releases/:releaseId/publish',
    {
      config: { action: 'releases.publish' },
      schema: {
        operationId: 'publishRelease',
        summary:
          'Publish a draft: devices of its channel converge to it, at once or wave by wave with a rollout plan (409 unless draft)',
        tags: ['dashboard'],
        params: releaseParams,
        querystring: noQuery,
        body: PublishBodySchema,
        response: { 200: ReleaseSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { application, ...caller } = await requireAppAccess(request);
      const plan = request.body?.rollout;
      if (!plan) {
        const release = await ctx.rollouts.publishNow(application, request.params.releaseId);
        await ctx.audit.record(audited(caller, release, 'release.publish'));
        return toReleaseView(release);
      }
      const checked = checkRolloutPlan(plan);
      if (checked instanceof AppError) throw checked;
      const { release } = await ctx.rollouts.publish(application, request.params.releaseId, checked, caller);
      await ctx.audit.record(audited(caller, release, 'release.publish', { rollout: checked }));
      return toReleaseView(release);
    },
  );

  app.post<{ Params: ReleaseParams }>(
    '/orgs/:orgId/apps/:appId/releases/:releaseId/yank',
    {
      config: { action: 'releases.publish' },
      schema: {
        operationId: 'yankRelease',
        summary:
          'Yank a release (a draft, to withdraw it; a published one: devices converge to the previous one, its unfinished rollout ends aborted); 409 once yanked',
        tags: ['dashboard'],
        params: releaseParams,
        querystring: noQuery,
        body: emptyBody,
        response: { 200: ReleaseSchema, ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (request) => {
      const { application, ...caller } = await requireAppAccess(request);
      const release = await ctx.rollouts.yank(application, request.params.releaseId, caller);
      await ctx.audit.record(audited(caller, release, 'release.yank'));
      return toReleaseView(release);
    },
  );
}
