import { DEVICE_STATES } from '@drover/shared';
import { RELEASE_STATUSES, UPDATE_POLICIES } from '../../../domain/model/releases.js';
import { CHAT_PROVIDERS } from '../../../domain/model/triggers.js';
import { idParams, nullableTimestamp, timestamp, uuid } from '../../schemas/common.js';
import { appExample, deviceExample, releaseExample } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

/**
 * Response schemas of the OTA dashboard endpoints (the bodies docs/ota.md fixes). Every field
 * returned is listed: fast-json-stringify drops anything else (binding internals such as retry
 * counters never leave).
 */

export const AppSchema = named('Application', {
  type: 'object',
  examples: [appExample],
  required: ['id', 'slug', 'updateWorkflowName', 'defaultChannel', 'notify', 'createdAt'],
  properties: {
    id: uuid,
    slug: { type: 'string' },
    updateWorkflowName: { type: 'string' },
    defaultChannel: { type: 'string' },
    notify: {
      type: ['object', 'null'],
      description: 'the chat channel a rollout of the application posts to when it pauses by itself (null: none)',
      required: ['provider', 'teamId', 'channelId'],
      properties: {
        provider: { type: 'string', enum: CHAT_PROVIDERS },
        teamId: { type: 'string' },
        channelId: { type: 'string' },
      },
    },
    createdAt: timestamp,
  },
} as const);

export const ReleaseSchema = named('Release', {
  type: 'object',
  examples: [releaseExample],
  required: [
    'id',
    'applicationId',
    'version',
    'sequence',
    'channel',
    'updatePolicy',
    'status',
    'artifactFileId',
    'checksumSha256',
    'size',
    'notes',
    'createdAt',
    'publishedAt',
    'yankedAt',
  ],
  properties: {
    id: uuid,
    applicationId: uuid,
    version: { type: 'string' },
    sequence: { type: 'integer' },
    channel: { type: 'string' },
    updatePolicy: { type: 'string', enum: UPDATE_POLICIES },
    status: { type: 'string', enum: RELEASE_STATUSES },
    artifactFileId: uuid,
    checksumSha256: { type: 'string' },
    size: { type: 'integer' },
    notes: { type: ['string', 'null'] },
    createdAt: timestamp,
    publishedAt: nullableTimestamp,
    yankedAt: nullableTimestamp,
  },
} as const);

/** `{releaseId, version, sequence}` or null (`releaseId` null: a version the agent reported without an id). */
export const ReleaseRefSchema = {
  type: ['object', 'null'],
  required: ['releaseId', 'version', 'sequence'],
  properties: {
    releaseId: { type: ['string', 'null'] },
    version: { type: 'string' },
    sequence: { type: 'integer' },
  },
} as const;

export const BindingSchema = named('DeviceBinding', {
  type: 'object',
  examples: [deviceExample],
  required: [
    'id',
    'applicationId',
    'agentId',
    'channel',
    'current',
    'desired',
    'forced',
    'state',
    'error',
    'activeJobId',
    'cancelledJobId',
    'lastReportAt',
  ],
  properties: {
    id: uuid,
    applicationId: uuid,
    agentId: uuid,
    channel: { type: 'string' },
    current: ReleaseRefSchema,
    desired: ReleaseRefSchema,
    forced: { type: 'boolean' },
    state: { type: ['string', 'null'], enum: [...DEVICE_STATES, null] },
    error: { type: ['string', 'null'] },
    activeJobId: { type: ['string', 'null'] },
    cancelledJobId: {
      type: ['string', 'null'],
      description: 'the update job a user cancelled; no new update job is issued until a reconcile (docs/ota.md)',
    },
    lastReportAt: nullableTimestamp,
  },
} as const);

export const appParams = idParams('orgId', 'appId');
export const releaseParams = idParams('orgId', 'appId', 'releaseId');
export const deviceParams = idParams('orgId', 'appId', 'deviceId');

export interface AppParams {
  orgId: string;
  appId: string;
}
export interface ReleaseParams extends AppParams {
  releaseId: string;
}
export interface DeviceParams extends AppParams {
  deviceId: string;
}
