import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { AppContext } from './context.js';
import { registerErrorHandling } from './error-handler.js';
import { trackAllowedMethods } from './method-not-allowed.js';
import { createGuardedServer } from './slow-clients.js';
import { registerGracefulClose } from './graceful-close.js';
import { registerValidation } from './validation.js';
import { registerJsonBodyParser } from './json-body.js';
import { parseQueryString } from './query-string.js';
import { answerClientError, answerFrameworkError } from './framework-errors.js';
import { orderRefusals } from './refusal-order.js';
import { lazyChildLoggerFactory, RequestLogController } from './request-logging.js';
import { ErrorBodySchema } from './schemas/common.js';
import { nameAnswers } from './schemas/named.js';
import { describeForDocument, markOptionalBodies } from './schemas/document-view.js';
import { openapiRoutes } from './routes/openapi.js';
import { publicApiRoutes } from './routes/public/index.js';
import { agentRoutes } from './routes/agent/index.js';
import { managementRoutes } from './routes/manage/index.js';
import { sessionHook } from './auth/session.js';
import { SESSION_SECURITY, withSecurity } from './routes/route-group.js';
import { authRoutes } from './routes/auth.js';
import { deviceAuthRoutes } from './routes/auth-device.js';
import { oidcAuthRoutes } from './routes/auth-oidc.js';
import { storageBlobRoutes } from './routes/storage-blobs.js';
import { chatOAuthCallbackRoutes } from './routes/chat/oauth-callback.js';
import { slackRoutes } from './routes/chat/slack.js';
import { discordRoutes } from './routes/chat/discord.js';
import { apiJobRoutes } from './routes/api-jobs.js';
import { apiDocsRoutes } from './routes/api-docs.js';
import { dashboardForBrowsers, dashboardRoutes } from './routes/dashboard/index.js';
import { DashboardBuild } from './routes/dashboard/dashboard-build.js';
import { registerHttpMetrics } from './http-metrics.js';
import { metricsRoutes } from './routes/metrics.js';
import { healthRoutes } from './routes/health.js';
import { sharedSerializers } from './shared-serializers.js';
import './context.js';

const ROUTER_OPTIONS = { ignoreTrailingSlash: true, maxParamLength: 200, querystringParser: parseQueryString };
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
    // The client's address (`request.ip`: sign-in lockouts, enrollment records, logs) comes from
    // X-Forwarded-For only through the load balancers DROVER_TRUST_PROXY names.
    trustProxy: ctx.config.trustProxy.length > 0 ? [...ctx.config.trustProxy] : false,
    requestIdHeader: false, // genReqId reads X-Request-Id itself and refuses unsafe values
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Fastify's own 503 body lacks `code`; graceful-close.ts answers in the error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    serverFactory: (handler) => createGuardedServer(handler, ctx.config),
    routerOptions: ROUTER_OPTIONS,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
  };
  const app = Fastify(options) as unknown as FastifyInstance;
  app.decorate('ctx', ctx);
  app.decorateRequest('rawBody', undefined);

  registerValidation(app);
  registerErrorHandling(app, trackAllowedMethods(app, ROUTER_OPTIONS));
  registerJsonBodyParser(app);
  orderRefusals(app);
  app.addSchema(ErrorBodySchema);
  nameAnswers(app);
  if (ctx.httpMetrics) registerHttpMetrics(app, ctx.httpMetrics);

  // Hooks in callback style: no promise per request. A request id on every answer; the shutdown's
  // own answers and connection handling in graceful-close.ts.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  registerGracefulClose(app);

  // The dashboard's session cookie (auth/session-cookie.ts).
  await app.register(cookie);

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
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'drover_session',
            description:
              'Dashboard session in a browser (set by POST /v1/auth/login; named __Host-drover_session over HTTPS); a change made with it also needs a same-origin Origin and X-Drover-CSRF: 1',
          },
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
    transform: describeForDocument,
    transformObject: (document) =>
      markOptionalBodies('openapiObject' in document ? document.openapiObject : document.swaggerObject),
  });

  // Route groups, each an encapsulated plugin that owns its authentication (docs/architecture.md).
  await app.register(
    async (v1) => {
      // Without credentials: the API description, sign-in, and presigned URLs (signed themselves).
      await v1.register(openapiRoutes);
      await v1.register(authRoutes);
      await v1.register(oidcAuthRoutes); // the single-use sign-in state
      await v1.register(deviceAuthRoutes); // the device code; the approval: dashboard session
      await v1.register(storageBlobRoutes);
      await v1.register(chatOAuthCallbackRoutes); // the single-use OAuth state
      await v1.register(slackRoutes); // Slack's request signature
      await v1.register(discordRoutes); // Discord's request signature
      await v1.register(publicApiRoutes); // API token
      await v1.register(agentRoutes); // agent signature (enrollment: its token)
      await v1.register(managementRoutes); // dashboard session
    },
    { prefix: '/v1' },
  );
  // The dashboard's console addresses, outside the API prefix: a session, as for the management
  // API; a browser asking for a page gets the dashboard, which signs in and reads the JSON.
  const dashboard = new DashboardBuild();
  await app.register(async (pages) => {
    withSecurity(pages, SESSION_SECURITY);
    pages.addHook('onRequest', dashboardForBrowsers(dashboard));
    pages.addHook('onRequest', sessionHook);
    await pages.register(apiJobRoutes);
  });
  // The Prometheus text for DROVER_METRICS_TOKEN's bearer (docs/metrics.md); without that token, no route.
  if (ctx.httpMetrics && ctx.config.metrics.token !== null) {
    await app.register(metricsRoutes(ctx.httpMetrics, ctx.config.metrics.token));
  }
  // For load balancers and supervisors, without credentials (docs/operations.md, "Health").
  await app.register(healthRoutes);
  // The interactive API reference (Swagger UI) at /docs, without credentials.
  await app.register(apiDocsRoutes);
  // The dashboard itself (pages and assets), without credentials: its pages sign in.
  await app.register(dashboardRoutes(dashboard));
  return app;
}
