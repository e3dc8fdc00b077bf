import type { FastifyInstance } from 'fastify';
import { agentSignatureHook } from '../../auth/agent-signature.js';
import { withSecurity } from '../route-group.js';
import { agentDeployRoutes } from './deploy.js';
import { agentEnrollRoutes } from './enroll.js';
import { agentFileRoutes } from './files.js';
import { agentJobRoutes } from './jobs.js';
import { agentLabelRoutes } from './labels.js';
import { agentSelfRoutes } from './me.js';
import { agentStreamRoutes } from './stream.js';
import { agentWorkflowRoutes } from './workflows.js';

/**
 * The agent protocol (docs/agent-protocol.md). Enrollment is the one call without a signature
 * (the enrollment token is its credential); every other route is in the signed group, whose
 * `preValidation` hook checks the signature over the raw body before the route's own hooks and
 * before the body is judged.
 */
export async function agentRoutes(app: FastifyInstance): Promise<void> {
  await app.register(agentEnrollRoutes);
  await app.register(async (signed) => {
    withSecurity(signed, [{ agentSignature: [] }]);
    signed.addHook('preValidation', agentSignatureHook);
    await signed.register(agentWorkflowRoutes);
    await signed.register(agentSelfRoutes);
    await signed.register(agentLabelRoutes);
    await signed.register(agentStreamRoutes);
    await signed.register(agentJobRoutes);
    await signed.register(agentFileRoutes);
    await signed.register(agentDeployRoutes);
  });
}
