/** The management API's answers the dashboard reads (docs/management.md). */

export type Role = 'owner' | 'member';

export interface User {
  id: string;
  email: string;
  createdAt?: string;
}

export interface Session {
  user: User;
  expiresAt: string;
}

export interface Org {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
}

export type AgentStatus = 'pending' | 'connected' | 'disconnected' | 'revoked';

export interface Agent {
  id: string;
  name: string;
  hostname: string;
  os: string;
  agentVersion: string;
  status: AgentStatus;
  lastSeenAt: string | null;
  enrolledAt: string;
}

export interface WorkflowParam {
  name: string;
  type: string;
  required?: boolean;
  default?: unknown;
  description?: string;
  pattern?: string;
  options?: unknown[];
  min?: number;
  max?: number;
}

export interface Workflow {
  id: string;
  agentId: string;
  name: string;
  description: string | null;
  version: string | null;
  /** null: the workflow declares no params (its definition has no `params:`). */
  paramsSchema: WorkflowParam[] | null;
}

export interface EnrollmentToken {
  id: string;
  name: string | null;
  token: string;
  expiresAt: string;
}

export interface JobLogLine {
  seq: number;
  at: string;
  stream: string;
  step: number | null;
  text: string;
}

/** A job as lists show it (`GET /orgs/:orgId/jobs`, docs/jobs.md "Reading jobs"). */
export interface Job {
  id: string;
  /** The organization's number of the job (1, 2, 3, ... in creation order), shown as `#12`. */
  number: number;
  orgId: string;
  kind: 'trigger' | 'update';
  source: string;
  status: string;
  triggerId: string | null;
  agentId: string;
  workflowId: string | null;
  workflowName: string;
  ref: string | null;
  debug: boolean;
  params: Record<string, unknown>;
  output: Record<string, unknown> | null;
  exitCode: number | null;
  errorMessage: string | null;
  forced: boolean;
  forceReason: string | null;
  userId: string | null;
  createdAt: string;
  queuedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  cancelRequestedAt: string | null;
  /** A chat run: who wrote the command, and where; null for every other job. */
  chatOrigin: ChatOrigin | null;
}

export interface ChatOrigin {
  provider: 'slack' | 'discord';
  teamId: string;
  channelId: string;
  userId: string;
  userName: string;
}

/** A chat message the job's end posts (its trigger's notification settings), and how its delivery goes. */
export interface JobNotification {
  /** The trigger's notification to its channel, the outcome told to a chat run's writer, or the answer to their mention. */
  kind: 'notification' | 'reply' | 'answer';
  provider: 'slack' | 'discord';
  teamId: string;
  channelId: string;
  status: 'pending' | 'sending' | 'sent' | 'failed';
  attempts: number;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  sentAt: string | null;
  failedAt: string | null;
}

export interface JobDetail extends Job {
  logs: JobLogLine[];
  notifications: JobNotification[];
}
