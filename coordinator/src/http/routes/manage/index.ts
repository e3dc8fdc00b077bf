import type { FastifyInstance } from 'fastify';
import { orgAccessHook, sessionHook } from '../../auth/session.js';
import { SESSION_SECURITY, withSecurity } from '../route-group.js';
import { agentManagementRoutes } from './agents.js';
import { apiTokenRoutes } from './api-tokens.js';
import { appRoutes } from './apps.js';
import { auditRoutes } from './audit.js';
import { chatIntegrationRoutes } from './chat-integrations.js';
import { deviceRoutes } from './devices.js';
import { enrollmentTokenRoutes } from './enrollment-tokens.js';
import { fileRoutes } from './files.js';
import { invitationRoutes } from './invitations.js';
import { jobRoutes } from './jobs.js';
import { batchRoutes } from './batches.js';
import { orgRoutes } from './orgs.js';
import { overviewRoutes } from './overview.js';
import { releaseRoutes } from './releases.js';
import { rolloutRoutes } from './rollouts.js';
import { storageBindingRoutes } from './storage-bindings.js';
import { triggerRunByHandRoutes } from './trigger-runs.js';
import { triggerRoutes } from './triggers.js';
import { workflowManagementRoutes } from './workflows.js';

/**
 * The management API (docs/management.md): every route needs a dashboard session, checked by this
 * group's `onRequest` hook before the body is read; a route under `/orgs/:orgId` then needs the
 * caller's role to allow the action it declares (`orgAccessHook`), before its body is validated.
 */
export async function managementRoutes(app: FastifyInstance): Promise<void> {
  withSecurity(app, SESSION_SECURITY);
  app.addHook('onRequest', sessionHook);
  orgAccessHook(app);
  await app.register(orgRoutes);
  await app.register(invitationRoutes);
  await app.register(enrollmentTokenRoutes);
  await app.register(agentManagementRoutes);
  await app.register(workflowManagementRoutes);
  await app.register(triggerRoutes);
  await app.register(triggerRunByHandRoutes);
  await app.register(apiTokenRoutes);
  await app.register(storageBindingRoutes);
  await app.register(fileRoutes);
  await app.register(auditRoutes);
  await app.register(jobRoutes);
  await app.register(overviewRoutes);
  await app.register(batchRoutes);
  await app.register(appRoutes);
  await app.register(releaseRoutes);
  await app.register(rolloutRoutes);
  await app.register(deviceRoutes);
  await app.register(chatIntegrationRoutes);
}
