import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { AppContext } from './context.js';
import { AppError } from '../errors.js';
import { registerErrorHandling } from './error-handler.js';
import { trackAllowedMethods } from './method-not-allowed.js';
import { createGuardedServer } from './slow-clients.js';
import { registerValidation } from './validation.js';
import { registerJsonBodyParser } from './json-body.js';
import { answerClientError, answerFrameworkError } from './framework-errors.js';
import { orderRefusals } from './refusal-order.js';
import { lazyChildLoggerFactory, RequestLogController } from './request-logging.js';
import { ErrorBodySchema } from './schemas/common.js';
import { openapiRoutes } from './routes/openapi.js';
import { authRoutes } from './routes/auth.js';
import { orgRoutes } from './routes/manage/orgs.js';
import { enrollmentTokenRoutes } from './routes/manage/enrollment-tokens.js';
import { agentManagementRoutes } from './routes/manage/agents.js';
import { workflowManagementRoutes } from './routes/manage/workflows.js';
import { triggerRoutes } from './routes/manage/triggers.js';
import { apiTokenRoutes } from './routes/manage/api-tokens.js';
import { storageBindingRoutes } from './routes/manage/storage-bindings.js';
import { auditRoutes } from './routes/manage/audit.js';
import { discoveryRoutes } from './routes/public/discovery.js';
import { triggerRunRoutes } from './routes/public/trigger-run.js';
import { storageRoutes } from './routes/public/storage.js';
import { storageBlobRoutes } from './routes/storage-blobs.js';
import { agentEnrollRoutes } from './routes/agent/enroll.js';
import { agentWorkflowRoutes } from './routes/agent/workflows.js';
import { agentSelfRoutes } from './routes/agent/me.js';
import { agentStreamRoutes } from './routes/agent/stream.js';
import { agentJobRoutes } from './routes/agent/jobs.js';
import { agentFileRoutes } from './routes/agent/files.js';
import { jobRoutes } from './routes/manage/jobs.js';
import { apiJobRoutes } from './routes/api-jobs.js';
import { appRoutes } from './routes/manage/apps.js';
import { releaseRoutes } from './routes/manage/releases.js';
import { deviceRoutes } from './routes/manage/devices.js';
import { agentDeployRoutes } from './routes/agent/deploy.js';
import './context.js';

const ROUTER_OPTIONS = { ignoreTrailingSlash: true, maxParamLength: 200 };
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds the HTTP application around an already-built context. Process concerns (listening,
 * signals) live in server.ts; this function is what tests call.
 */
export async function buildApp(ctx: AppContext, logger: Logger): Promise<FastifyInstance> {
  const options: FastifyServerOptions = {
    loggerInstance: logger,
    logController: new RequestLogController(logger),
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: ctx.config.bodyLimitBytes,
    requestIdHeader: false, // genReqId reads X-Request-Id itself and refuses unsafe values
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Fastify's own 503 body lacks `code`; the preClose/onRequest hooks below answer in the error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    serverFactory: (handler) => createGuardedServer(handler, ctx.config),
    routerOptions: ROUTER_OPTIONS,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  };
  const app = Fastify(options) as unknown as FastifyInstance;
  app.decorate('ctx', ctx);
  app.decorateRequest('rawBody', undefined);

  registerValidation(app);
  registerErrorHandling(app, trackAllowedMethods(app, ROUTER_OPTIONS));
  registerJsonBodyParser(app);
  orderRefusals(app);
  app.addSchema(ErrorBodySchema);

  // Hooks in callback style: no promise per request. While closing, requests still arriving on
  // open connections get 503 `unavailable`.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    if (!closing) {
      done();
      return;
    }
    void reply.header('connection', 'close');
    done(new AppError('unavailable', 'The server is shutting down; retry shortly'));
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Drover coordinator API',
        version: '1',
        description:
          'The public API (API tokens), the dashboard management endpoints (sessions) and the signed agent protocol.',
      },
      components: {
        securitySchemes: {
          apiToken: { type: 'http', scheme: 'bearer', description: 'API token (drv_...)' },
          session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard session' },
          agentSignature: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Signature',
            description:
              'Ed25519 signature of the request, sent with X-Agent-Id, X-Timestamp and X-Nonce (docs/agent-protocol.md, section 3)',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  await app.register(
    async (v1) => {
      await v1.register(openapiRoutes);
      await v1.register(authRoutes);
      await v1.register(orgRoutes);
      await v1.register(enrollmentTokenRoutes);
      await v1.register(agentManagementRoutes);
      await v1.register(workflowManagementRoutes);
      await v1.register(triggerRoutes);
      await v1.register(apiTokenRoutes);
      await v1.register(storageBindingRoutes);
      await v1.register(auditRoutes);
      await v1.register(discoveryRoutes);
      await v1.register(triggerRunRoutes);
      await v1.register(storageRoutes);
      await v1.register(storageBlobRoutes);
      await v1.register(agentEnrollRoutes);
      await v1.register(agentWorkflowRoutes);
      await v1.register(agentSelfRoutes);
      await v1.register(agentStreamRoutes);
      await v1.register(agentJobRoutes);
      await v1.register(agentFileRoutes);
      await v1.register(jobRoutes);
      await v1.register(appRoutes);
      await v1.register(releaseRoutes);
      await v1.register(deviceRoutes);
      await v1.register(agentDeployRoutes);
    },
    { prefix: '/v1' },
  );
  // The dashboard's job page (`statusUrl`), outside the API prefix.
  await app.register(apiJobRoutes);
  return app;
}
