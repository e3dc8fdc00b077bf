import { ParamDefinition } from '@drover/shared';
import { AGENT_STATUSES } from '../../domain/model/agents.js';
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES } from '../../domain/model/audit.js';
import { ROLES } from '../../domain/model/orgs.js';
import { nullableTimestamp, timestamp, uuid } from './common.js';
import {
  agentExample,
  publicAgentExample,
  auditEntryExample,
  managedWorkflowExample,
  memberExample,
  orgExample,
  paramsSchemaExample,
  invitationExample,
  rateLimitExample,
  storageBindingExample,
} from './examples.js';
import { named } from './named.js';

/**
 * Response schemas of the dashboard management endpoints (the shapes fixed in the brief). They
 * also keep internal fields (publicKey, config, secrets, steps) out of every answer:
 * fast-json-stringify drops anything not listed.
 */

/** A route without query parameters: an unknown one is a 422, as an unknown body field is. */
export const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

const role = { type: 'string', enum: ROLES } as const;
const name = { type: 'string' } as const;

export const OrgSchema = named('Org', {
  type: 'object',
  examples: [orgExample],
  required: ['id', 'name', 'role', 'createdAt'],
  properties: { id: uuid, name, role, createdAt: timestamp },
} as const);

export const MemberSchema = named('Member', {
  type: 'object',
  examples: [memberExample],
  required: ['userId', 'email', 'role', 'joinedAt', 'ssoGroup'],
  properties: {
    userId: uuid,
    email: { type: 'string' },
    role,
    joinedAt: timestamp,
    ssoGroup: {
      type: ['string', 'null'],
      description:
        'The single sign-on group whose role map entry set the role: the map removes the member, or gives back ' +
        'the role they had before, once they sign in with no group naming the organization. Null: the owners manage it.',
    },
  },
} as const);

export const InvitationSchema = named('Invitation', {
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
} as const);

/** Agent labels (docs/fleets.md): key to value. */
export const labelsSchema = (description: string) =>
  ({
    type: 'object',
    description: `${description}. Keys: 1 to 63 of a-z 0-9 . _ / -, starting and ending with a letter or digit; values: up to 63 of A-Z a-z 0-9 . _ -`,
    additionalProperties: { type: 'string' },
  }) as const;

/** An agent's fields as the public API shows them (discovery): the specification's, nothing more. */
const PUBLIC_AGENT_FIELDS = {
  id: uuid,
  name,
  hostname: { type: 'string' },
  os: { type: 'string' },
  agentVersion: { type: 'string' },
  status: { type: 'string', enum: AGENT_STATUSES },
  lastSeenAt: nullableTimestamp,
  enrolledAt: timestamp,
} as const;

/** An agent's fields as the management API shows them: the public ones and its labels. */
const AGENT_FIELDS = {
  ...PUBLIC_AGENT_FIELDS,
  labels: labelsSchema("The agent's labels: those it reports, with the operators' on top"),
  reportedLabels: labelsSchema('The labels the agent reports of itself (os and arch among them; at most 32)'),
  operatorLabels: labelsSchema("The labels operators set (at most 32); one wins over the agent's of the same key"),
  revision: {
    type: 'integer',
    minimum: 0,
    description:
      "How many changes operators made to the agent (its name, its operators' labels): its ETag, a change's If-Match",
  },
} as const;

/** A named agent schema of these fields, every one of them required. */
const agentSchema = <const F extends object>(schemaName: string, example: object, fields: F) =>
  named(schemaName, {
    type: 'object',
    examples: [example],
    required: Object.keys(fields),
    properties: fields,
  } as const);

/** An agent as the public API shows it (discovery). */
export const PublicAgentSchema = agentSchema('PublicAgent', publicAgentExample, PUBLIC_AGENT_FIELDS);

export const AgentSchema = agentSchema('Agent', agentExample, AGENT_FIELDS);

/** A param a workflow declares (its definition's `params:`, docs/workflows.md). */
export const WorkflowParamSchema = named('WorkflowParam', { ...ParamDefinition, examples: paramsSchemaExample });

const nullableLimit = { type: ['integer', 'null'] } as const;

/** An API token's job limits (null: no limit), as the management and public token answers show them. */
export const RateLimitSchema = named('RateLimit', {
  type: 'object',
  examples: [rateLimitExample],
  required: ['perMinute', 'perHour', 'perDay'],
  properties: { perMinute: nullableLimit, perHour: nullableLimit, perDay: nullableLimit },
} as const);

export const ManagedWorkflowSchema = named('Workflow', {
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
    paramsSchema: { type: ['array', 'null'], items: WorkflowParamSchema },
    rateLimitPerMinute: nullableLimit,
    rateLimitPerHour: nullableLimit,
    rateLimitPerDay: nullableLimit,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const);

/** What a change of the labels of the agents a selector matches did, or would do (`dryRun`). */
export const RelabelledSchema = named('RelabelledAgents', {
  type: 'object',
  examples: [
    {
      matching: 14,
      changed: 1,
      dryRun: false,
      agents: [
        { id: agentExample.id, name: 'edge-lab-01', from: { site: 'munich' }, to: { ring: 'canary', site: 'munich' } },
      ],
    },
  ],
  required: ['matching', 'changed', 'dryRun', 'agents'],
  properties: {
    matching: { type: 'integer', description: 'How many agents the selector matches (revoked ones left out)' },
    changed: {
      type: 'integer',
      description: 'How many of them the change changed (would change, with dryRun): the others have it already',
    },
    dryRun: { type: 'boolean' },
    agents: {
      type: 'array',
      description: "The agents changed (would be), with their operators' labels before and after",
      items: {
        type: 'object',
        required: ['id', 'name', 'from', 'to'],
        properties: {
          id: uuid,
          name,
          from: labelsSchema("The operators' labels before"),
          to: labelsSchema("The operators' labels after"),
        },
      },
    },
  },
} as const);

export const SelectorMatchesSchema = named('SelectorMatches', {
  type: 'object',
  description:
    'What a trigger on this label selector would run on if called now: the agents it matches (revoked ones aside), those lacking the workflow, the workflows they report',
  examples: [
    {
      matching: 3,
      names: ['gw-a', 'gw-b', 'gw-c'],
      lacking: 1,
      lackingNames: ['gw-c'],
      workflowNames: ['rotate', 'status'],
      versions: [managedWorkflowExample],
    },
  ],
  required: ['matching', 'names', 'lacking', 'lackingNames', 'workflowNames', 'versions'],
  properties: {
    matching: { type: 'integer', minimum: 0, description: 'the agents the selector matches, revoked ones aside' },
    names: { type: 'array', items: { type: 'string' }, description: 'the first 12 of their names, in byte order' },
    lacking: {
      type: 'integer',
      minimum: 0,
      description: 'those of them that do not report workflowName (their jobs would be rejected); 0 without it',
    },
    lackingNames: { type: 'array', items: { type: 'string' }, description: 'the first 12 of their names' },
    workflowNames: {
      type: 'array',
      items: { type: 'string' },
      description: 'the names of the workflows they report, each once, in byte order (at most 500)',
    },
    versions: {
      type: 'array',
      items: ManagedWorkflowSchema,
      description: 'workflowName as they report it: one of each distinct params schema',
    },
  },
} as const);

export const StorageBindingSchema = named('StorageBinding', {
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
} as const);

export const AuditEntrySchema = named('AuditEntry', {
  type: 'object',
  examples: [auditEntryExample],
  required: ['id', 'action', 'actorType', 'actorId', 'targetType', 'targetId', 'metadata', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    action: { type: 'string', enum: AUDIT_ACTIONS, description: 'what was done (docs/management.md, "Audit log")' },
    actorType: { type: 'string', enum: AUDIT_ACTOR_TYPES },
    actorId: { type: ['string', 'null'] },
    targetType: { type: ['string', 'null'] },
    targetId: { type: ['string', 'null'] },
    metadata: { type: 'object', additionalProperties: true },
    createdAt: timestamp,
  },
} as const);

/** A 204 answer: no body. */
export const noContent = { type: 'null', description: 'No content' } as const;
