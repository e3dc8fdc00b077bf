import { ParamDefinition } from '@drover/shared';
import { ROLES } from '../../domain/model/orgs.js';
import { nullableTimestamp, timestamp, uuid } from './common.js';
import {
  agentExample,
  auditEntryExample,
  managedWorkflowExample,
  memberExample,
  orgExample,
  invitationExample,
  rateLimitExample,
  storageBindingExample,
} from './examples.js';

/**
 * Response schemas of the dashboard management endpoints (the shapes fixed in the brief). They
 * also keep internal fields (publicKey, config, secrets, steps) out of every answer:
 * fast-json-stringify drops anything not listed.
 */

/** A route without query parameters: an unknown one is a 422, as an unknown body field is. */
export const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

const role = { type: 'string', enum: ROLES } as const;
const name = { type: 'string' } as const;

export const OrgSchema = {
  type: 'object',
  examples: [orgExample],
  required: ['id', 'name', 'role', 'createdAt'],
  properties: { id: uuid, name, role, createdAt: timestamp },
} as const;

export const MemberSchema = {
  type: 'object',
  examples: [memberExample],
  required: ['userId', 'email', 'role', 'joinedAt'],
  properties: { userId: uuid, email: { type: 'string' }, role, joinedAt: timestamp },
} as const;

export const InvitationSchema = {
  type: 'object',
  examples: [invitationExample],
  required: ['id', 'orgId', 'orgName', 'email', 'role', 'status', 'invitedBy', 'createdAt', 'expiresAt', 'endedAt'],
  properties: {
    id: uuid,
    orgId: uuid,
    orgName: { type: 'string' },
    email: { type: 'string' },
    role,
    status: { type: 'string', enum: ['pending', 'accepted', 'declined', 'revoked', 'expired'] },
    invitedBy: {
      type: ['object', 'null'],
      description: 'The owner who invited; null once their account is gone',
      required: ['userId', 'email'],
      properties: { userId: uuid, email: { type: 'string' } },
    },
    createdAt: timestamp,
    expiresAt: timestamp,
    endedAt: nullableTimestamp,
  },
} as const;

export const AgentSchema = {
  type: 'object',
  examples: [agentExample],
  required: ['id', 'name', 'hostname', 'os', 'agentVersion', 'status', 'lastSeenAt', 'enrolledAt'],
  properties: {
    id: uuid,
    name,
    hostname: { type: 'string' },
    os: { type: 'string' },
    agentVersion: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'connected', 'disconnected', 'revoked'] },
    lastSeenAt: nullableTimestamp,
    enrolledAt: timestamp,
  },
} as const;

const nullableLimit = { type: ['integer', 'null'] } as const;

/** An API token's job limits (null: no limit), as the management and public token answers show them. */
export const RateLimitSchema = {
  type: 'object',
  examples: [rateLimitExample],
  required: ['perMinute', 'perHour', 'perDay'],
  properties: { perMinute: nullableLimit, perHour: nullableLimit, perDay: nullableLimit },
} as const;

export const ManagedWorkflowSchema = {
  type: 'object',
  examples: [managedWorkflowExample],
  required: [
    'id',
    'agentId',
    'name',
    'description',
    'version',
    'paramsSchema',
    'rateLimitPerMinute',
    'rateLimitPerHour',
    'rateLimitPerDay',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: uuid,
    agentId: uuid,
    name,
    description: { type: ['string', 'null'] },
    version: { type: ['string', 'null'] },
    paramsSchema: { type: ['array', 'null'], items: ParamDefinition },
    rateLimitPerMinute: nullableLimit,
    rateLimitPerHour: nullableLimit,
    rateLimitPerDay: nullableLimit,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

export const StorageBindingSchema = {
  type: 'object',
  examples: [storageBindingExample],
  required: ['id', 'name', 'backend', 'isDefault', 'createdAt'],
  properties: {
    id: uuid,
    name,
    backend: { type: 'string', enum: ['local', 's3'] },
    isDefault: { type: 'boolean' },
    createdAt: timestamp,
  },
} as const;

/** Who an audit entry says acted. */
export const ACTOR_TYPES = ['user', 'api_token', 'agent', 'system'] as const;

export const AuditEntrySchema = {
  type: 'object',
  examples: [auditEntryExample],
  required: ['id', 'action', 'actorType', 'actorId', 'targetType', 'targetId', 'metadata', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    action: { type: 'string' },
    actorType: { type: 'string', enum: ACTOR_TYPES },
    actorId: { type: ['string', 'null'] },
    targetType: { type: ['string', 'null'] },
    targetId: { type: ['string', 'null'] },
    metadata: { type: 'object', additionalProperties: true },
    createdAt: timestamp,
  },
} as const;

/** A 204 answer: no body. */
export const noContent = { type: 'null', description: 'No content' } as const;
