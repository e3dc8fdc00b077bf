import { DEVICE_STATES, MAX_RELEASE_KEYS, MAX_SELECTOR_LENGTH, RELEASE_KEY_PATTERN } from '@drover/shared';
import { BINDING_ORIGINS } from '../../../domain/model/device-bindings.js';
import { MAX_CRON_EXPRESSION_LENGTH } from '../../../domain/cron/triggers-cron.js';
import { MAX_WINDOW_MINUTES } from '../../../domain/ota/maintenance-window.js';
import { RELEASE_STATUSES, UPDATE_POLICIES } from '../../../domain/model/releases.js';
import { CHAT_PROVIDERS } from '../../../domain/model/triggers.js';
import { idParams, nullableTimestamp, timestamp, uuid } from '../../schemas/common.js';
import {
  appExample,
  appUpdateExample,
  deviceCountExample,
  deviceExample,
  deviceGroupPreviewExample,
  releaseExample,
} from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

/**
 * Response schemas of the OTA dashboard endpoints (the bodies docs/ota.md fixes). Every field
 * returned is listed: fast-json-stringify drops anything else (binding internals such as retry
 * counters never leave).
 */

export const windowFields = {
  cron: {
    type: 'string',
    minLength: 1,
    maxLength: MAX_CRON_EXPRESSION_LENGTH,
    description:
      'a 5-field cron expression, as a cron trigger takes (docs/schedules.md): a window opens at each occurrence',
  },
  timezone: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    description: 'an IANA time zone, e.g. `Europe/Berlin`, `UTC`',
  },
  durationMinutes: {
    type: 'integer',
    description: `how long each window stays open: 1 to ${MAX_WINDOW_MINUTES} minutes (7 days)`,
  },
} as const;

/** A maintenance window as a PATCH of an application gives it (ranges and syntax: checked by the domain). */
export const maintenanceWindowBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['cron', 'timezone', 'durationMinutes'],
  description: 'optional updates start only inside a window; null removes it (docs/ota.md, "Maintenance windows")',
  properties: windowFields,
} as const;

export const WindowSchema = named('NextWindow', {
  type: 'object',
  examples: [appExample.nextWindows[0]],
  required: ['opensAt', 'closesAt', 'localOpensAt'],
  properties: {
    opensAt: timestamp,
    closesAt: timestamp,
    localOpensAt: { type: 'string', description: "the opening in the window's zone, ISO 8601 with its offset" },
  },
} as const);

const maintenanceWindowView = {
  type: ['object', 'null'],
  required: ['cron', 'timezone', 'durationMinutes'],
  properties: windowFields,
  description: 'optional updates start only inside a window (docs/ota.md, "Maintenance windows"); null: at once',
} as const;

const nextWindowsView = {
  type: 'array',
  items: WindowSchema,
  description: 'the windows not yet ended (the open one first), three; empty without a window',
} as const;

export const WindowPreviewSchema = named('WindowPreview', {
  type: 'object',
  required: ['maintenanceWindow', 'nextWindows'],
  examples: [{ maintenanceWindow: appExample.maintenanceWindow, nextWindows: appExample.nextWindows }],
  properties: {
    maintenanceWindow: { ...maintenanceWindowView, type: 'object', description: 'the window as it would be stored' },
    nextWindows: nextWindowsView,
  },
} as const);

const appProperties = {
  id: uuid,
  slug: { type: 'string' },
  updateWorkflowName: { type: 'string' },
  defaultChannel: { type: 'string' },
  deviceSelector: {
    type: ['string', 'null'],
    description:
      'the device group: a label selector (canonical) whose matching agents are bound to the application; null: none (docs/ota.md, "Device groups")',
  },
  maintenanceWindow: maintenanceWindowView,
  nextWindows: nextWindowsView,
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
  releaseKeys: {
    type: ['array', 'null'],
    items: { type: 'string' },
    description:
      'the Ed25519 public keys (standard base64) one of which must sign every release; null: releases are not signed (docs/ota.md, "Release keys")',
  },
  releaseKeyGeneration: {
    type: 'integer',
    description: 'how many times the release keys were rotated (0: the first set, or none)',
  },
  createdAt: timestamp,
} as const;
const appRequired = [
  'id',
  'slug',
  'updateWorkflowName',
  'defaultChannel',
  'deviceSelector',
  'maintenanceWindow',
  'nextWindows',
  'notify',
  'releaseKeys',
  'releaseKeyGeneration',
  'createdAt',
] as const;

/** A release key as a body gives it. */
const releaseKeySchema = {
  type: 'string',
  pattern: RELEASE_KEY_PATTERN,
  description: 'an Ed25519 public key: the standard base64 of its raw 32 bytes (`drover release keygen` prints it)',
} as const;

/** `releaseKeys` in the bodies that create or change an application. */
export const releaseKeysBody = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_RELEASE_KEYS,
  items: releaseKeySchema,
  description: `1 to ${MAX_RELEASE_KEYS} Ed25519 public keys: every release must then be signed by one of them (docs/ota.md, "Release keys")`,
} as const;

/** `releaseKeyRotation` in the PATCH body of an application (`drover release rotate-keys` makes it). */
export const releaseKeyRotationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['app', 'generation', 'keys', 'signedBy', 'signature'],
  description:
    'a change of the release keys, signed by a key of the current set (docs/ota.md, "Release keys"); devices that pinned the current set follow it',
  properties: {
    app: { type: 'string', description: "the application's slug" },
    generation: { type: 'integer', minimum: 1, description: 'the current generation + 1' },
    keys: { ...releaseKeysBody, description: 'the new key set' },
    signedBy: releaseKeySchema,
    signature: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;

export const AppSchema = named('Application', {
  type: 'object',
  examples: [appExample],
  required: appRequired,
  properties: appProperties,
} as const);

/** `deviceSelector` in the PATCH body of an application. */
export const deviceSelectorSchema = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: MAX_SELECTOR_LENGTH,
  description:
    'a label selector (docs/fleets.md) with at least one requirement: every agent it matches (not revoked) is bound to the application on its default channel, and unbound when it stops matching; null removes the bindings it made',
} as const;

/** The answer of PATCH: the application, and what its device group matches and did when `deviceSelector` was sent. */
export const AppUpdateSchema = named('ApplicationUpdate', {
  type: 'object',
  examples: [appUpdateExample],
  required: [...appRequired, 'deviceGroup'],
  properties: {
    ...appProperties,
    deviceGroup: {
      type: ['object', 'null'],
      description:
        'when the body had deviceSelector: how many agents the selector matches now (revoked ones aside; 0: it binds nothing), and how many bindings it added and removed; else null',
      required: ['matching', 'bound', 'unbound'],
      properties: {
        matching: { type: 'integer', minimum: 0 },
        bound: { type: 'integer', minimum: 0 },
        unbound: { type: 'integer', minimum: 0 },
      },
    },
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
    'signature',
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
    signature: {
      type: ['string', 'null'],
      description: "its signature by one of the application's release keys (standard base64); null: unsigned",
    },
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
    'origin',
    'current',
    'desired',
    'forced',
    'state',
    'error',
    'activeJobId',
    'cancelledJobId',
    'lastReportAt',
    'waitingForWindow',
    'nextWindowAt',
  ],
  properties: {
    id: uuid,
    applicationId: uuid,
    agentId: uuid,
    channel: { type: 'string' },
    origin: {
      type: 'string',
      enum: BINDING_ORIGINS,
      description:
        "manual: bound by agentIds (never removed by the device selector); selector: bound by the application's device selector",
    },
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
    waitingForWindow: {
      type: 'boolean',
      description: "the update waits for the application's maintenance window to open: no update job until then",
    },
    nextWindowAt: { ...nullableTimestamp, description: 'when that window opens; null when not waiting' },
  },
} as const);

export const DeviceCountSchema = named('DeviceCount', {
  type: 'object',
  description:
    'Devices of an application alike in channel, origin, current and desired release, update under way and state, and how many',
  examples: [deviceCountExample],
  required: ['channel', 'origin', 'current', 'desiredReleaseId', 'updating', 'state', 'devices'],
  properties: {
    channel: { type: 'string' },
    origin: { type: 'string', enum: BINDING_ORIGINS },
    current: ReleaseRefSchema,
    desiredReleaseId: { type: ['string', 'null'], description: 'the release they should run; null: none' },
    updating: { type: 'boolean', description: 'an update job is under way (activeJobId set)' },
    state: { type: ['string', 'null'], enum: [...DEVICE_STATES, null] },
    devices: { type: 'integer', minimum: 1 },
  },
} as const);

export const DeviceGroupPreviewSchema = named('DeviceGroupPreview', {
  type: 'object',
  description: "What setting a device selector as the application's device group would do now",
  examples: [deviceGroupPreviewExample],
  required: ['matching', 'names', 'toBind', 'toRemove'],
  properties: {
    matching: { type: 'integer', minimum: 0, description: 'the agents it matches, revoked ones aside' },
    names: {
      type: 'array',
      items: { type: 'string' },
      maxItems: 10,
      description: 'the first 10 of their names, in byte order',
    },
    toBind: { type: 'integer', minimum: 0, description: 'the agents applying it would bind (not bound yet)' },
    toRemove: {
      type: 'integer',
      minimum: 0,
      description: 'the bindings the device group made that applying it would remove (their agent no longer matches)',
    },
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
