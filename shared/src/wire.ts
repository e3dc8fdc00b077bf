/**
 * Wire contract between agent and coordinator: each message as a JSON schema (used by the
 * coordinator's routes for validation and OpenAPI) paired with its TypeScript type under the
 * same name, so the two sides cannot drift. The types are written out rather than derived from
 * the schemas (json-schema-to-ts's `FromSchema`) to keep them named and documented where they
 * are used; shared/test/wire-schemas.test.ts fails the type-check when a schema and its type
 * disagree.
 */

export const EnrollRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['enrollmentToken', 'publicKey', 'hostname', 'os', 'agentVersion'],
  properties: {
    enrollmentToken: { type: 'string', minLength: 1, maxLength: 200 },
    publicKey: {
      type: 'string',
      minLength: 44,
      maxLength: 44,
      description: 'standard base64 of the raw 32-byte Ed25519 key',
    },
    hostname: { type: 'string', minLength: 1, maxLength: 255 },
    os: { type: 'string', minLength: 1, maxLength: 255 },
    agentVersion: { type: 'string', minLength: 1, maxLength: 64 },
    name: { type: 'string', minLength: 1, maxLength: 255, description: 'the agent name; defaults to the hostname' },
  },
} as const;
export interface EnrollRequest {
  enrollmentToken: string;
  publicKey: string;
  hostname: string;
  os: string;
  agentVersion: string;
  /** Optional (docs/agent-protocol.md, "Enrollment"): the agent's display name; defaults to `hostname`. */
  name?: string;
}

export const EnrollResponse = {
  type: 'object',
  required: ['agentId', 'orgId', 'serverPublicKey'],
  properties: {
    agentId: { type: 'string' },
    orgId: { type: 'string' },
    serverPublicKey: { type: 'string' },
  },
} as const;
export interface EnrollResponse {
  agentId: string;
  orgId: string;
  serverPublicKey: string;
}

/** `file` (a Drover addition to the spec's four types): the value is a FileRef (shared/src/file-refs.ts). */
export const PARAM_TYPES = ['string', 'number', 'boolean', 'enum', 'file'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];

/** A workflow's name: a letter or digit, then letters, digits, `_`, `.` and `-`. */
export const WORKFLOW_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
/** A param's name: a letter or `_`, then letters, digits, `_`, `.` and `-` (it becomes `DROVER_PARAM_<NAME>`). */
export const PARAM_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_.-]*$';
/** A lowercase hex SHA-256. */
export const SHA256_HEX_PATTERN = '^[0-9a-f]{64}$';

/** One item of a workflow's `paramsSchema` (docs/agent-protocol.md). */
export const ParamDefinition = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 128, pattern: PARAM_NAME_PATTERN },
    type: { type: 'string', enum: PARAM_TYPES },
    required: { type: 'boolean' },
    default: { type: ['string', 'number', 'boolean'] },
    pattern: {
      type: 'string',
      maxLength: 1024,
      description:
        'for a `string`: a regular expression in RE2 syntax (no lookaround, backreferences or possessive ' +
        'quantifiers), tested unanchored; at most 5,000 instructions compiled (docs/agent.md, "Param patterns")',
    },
    options: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 255 } },
    min: { type: 'number' },
    max: { type: 'number' },
    description: { type: 'string', maxLength: 2000 },
  },
} as const;
export interface ParamDefinition {
  name: string;
  type: ParamType;
  required?: boolean;
  default?: string | number | boolean;
  pattern?: string;
  options?: string[];
  min?: number;
  max?: number;
  description?: string;
}

export const WorkflowStep = {
  type: 'object',
  additionalProperties: false,
  required: ['run'],
  properties: {
    name: { type: 'string', maxLength: 255 },
    run: { type: 'string', minLength: 1, maxLength: 4096 },
    args: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 4096 } },
    env: { type: 'object', maxProperties: 256, additionalProperties: { type: 'string', maxLength: 8192 } },
    cwd: { type: 'string', maxLength: 4096 },
    timeout: { type: 'integer', minimum: 1, maximum: 86_400_000 },
    shell: { type: 'boolean' },
  },
} as const;
export interface WorkflowStep {
  name?: string;
  run: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Milliseconds. */
  timeout?: number;
  /** Run `run` through `/bin/sh -c` instead of as a program with `args`. */
  shell?: boolean;
}

/** A cancelled job's steps get this long between SIGTERM and SIGKILL unless the workflow sets `cancelGrace`. */
export const DEFAULT_CANCEL_GRACE_MS = 10_000;
/** The longest `cancelGrace` a workflow may set: 1 hour. */
export const MAX_CANCEL_GRACE_MS = 3_600_000;

export const WorkflowDefinition = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'steps'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 128, pattern: WORKFLOW_NAME_PATTERN },
    description: { type: ['string', 'null'], maxLength: 2000 },
    version: { type: ['string', 'null'], maxLength: 128 },
    paramsSchema: { type: ['array', 'null'], maxItems: 128, items: ParamDefinition },
    secretsKeys: { type: 'array', maxItems: 128, items: { type: 'string', minLength: 1, maxLength: 128 } },
    timeout: { type: 'integer', minimum: 1, maximum: 86_400_000 },
    cancelGrace: { type: 'integer', minimum: 1, maximum: MAX_CANCEL_GRACE_MS },
    steps: { type: 'array', minItems: 1, maxItems: 256, items: WorkflowStep },
  },
} as const;
export interface WorkflowDefinition {
  name: string;
  description?: string | null;
  version?: string | null;
  paramsSchema?: ParamDefinition[] | null;
  secretsKeys?: string[];
  /** Milliseconds for the whole job. */
  timeout?: number;
  /**
   * Milliseconds between SIGTERM and SIGKILL to the steps of a cancelled job (default
   * DEFAULT_CANCEL_GRACE_MS).
   */
  cancelGrace?: number;
  steps: WorkflowStep[];
}

export const PutWorkflowsRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['workflows'],
  properties: {
    workflows: { type: 'array', maxItems: 512, items: WorkflowDefinition },
  },
} as const;
export interface PutWorkflowsRequest {
  workflows: WorkflowDefinition[];
}

export const AGENT_STATUSES = ['pending', 'connected', 'disconnected', 'revoked'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** `GET /v1/agent/me`: the signed self-check. */
export const AgentSelf = {
  type: 'object',
  required: ['agentId', 'orgId', 'name', 'status'],
  properties: {
    agentId: { type: 'string' },
    orgId: { type: 'string' },
    name: { type: 'string' },
    status: { type: 'string', enum: AGENT_STATUSES },
  },
} as const;
export interface AgentSelf {
  agentId: string;
  orgId: string;
  name: string;
  status: AgentStatus;
}

/**
 * `PUT /v1/agent/labels`: the labels the agent reports of itself (docs/fleets.md), sent when it
 * connects; they replace those it reported before. `os` and `arch` are always among them.
 */
export const PutAgentLabelsRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['labels'],
  properties: { labels: { type: 'object', additionalProperties: { type: 'string' } } },
} as const;
export interface PutAgentLabelsRequest {
  labels: Record<string, string>;
}

/** The answer: the agent's labels as the coordinator now has them (reported, operators', merged). */
export const PutAgentLabelsResponse = {
  type: 'object',
  required: ['labels', 'reportedLabels', 'operatorLabels'],
  properties: {
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    reportedLabels: { type: 'object', additionalProperties: { type: 'string' } },
    operatorLabels: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;
export interface PutAgentLabelsResponse {
  labels: Record<string, string>;
  reportedLabels: Record<string, string>;
  operatorLabels: Record<string, string>;
}

/** A workflow as the public API shows it (docs/agent-protocol.md); never secrets, secretsKeys or steps. */
export const PublicWorkflow = {
  type: 'object',
  required: ['id', 'agentId', 'name', 'description', 'version', 'paramsSchema'],
  properties: {
    id: { type: 'string' },
    agentId: { type: 'string' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    version: { type: ['string', 'null'] },
    paramsSchema: {
      type: ['array', 'null'],
      items: {
        type: 'object',
        required: ['name', 'type'],
        properties: ParamDefinition.properties,
      },
    },
  },
} as const;
export interface PublicWorkflow {
  id: string;
  agentId: string;
  name: string;
  description: string | null;
  version: string | null;
  paramsSchema: ParamDefinition[] | null;
}

/** `PUT /v1/agent/workflows` answer: the agent's active workflows, ascending by name. */
export const PutWorkflowsResponse = {
  type: 'object',
  required: ['workflows'],
  properties: { workflows: { type: 'array', items: PublicWorkflow } },
} as const;
export interface PutWorkflowsResponse {
  workflows: PublicWorkflow[];
}
