import type { FastifyRequest } from 'fastify';
import { findApp } from '../../../domain/ota/apps.js';
import { requireOrgRole } from '../../auth/session.js';
import type { AppParams } from './ota-schemas.js';

/**
 * The calling member and the application of the path (404 outside the organization or when
 * the application is deleted): the access check of every route under an application.
 */
export async function requireAppAccess(request: FastifyRequest<{ Params: AppParams }>) {
  const { orgId, userId } = await requireOrgRole(request, request.params.orgId);
  return { orgId, userId, application: await findApp(request.server.ctx, orgId, request.params.appId) };
}
