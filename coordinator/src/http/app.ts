import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { UUID_REGEX } from '@drover/shared';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { AppContext } from './context.js';
import { AppError } from '../errors.js';
import { registerErrorHandling } from './error-handler.js';
import { registerValidation } from './validation.js';
import { registerJsonBodyParser, surfaceBodyError } from './json-body.js';
import { sessionHook } from './auth/session.js';
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
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: (error, request, reply) => {
      const refusal =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new AppError('not_found', 'Not found: no resource has an id this long')
          : error.code === 'FST_ERR_BAD_URL'
            ? new AppError('bad_request', 'The URL is not valid: it has a malformed percent-encoding')
            : new AppError('internal', 'Internal server error');
      const raw = reply as unknown as FastifyReply;
      void raw.header('x-request-id', request.id).status(refusal.statusCode).send(refusal.toBody());
    },
    clientErrorHandler: answerClientError,
  };
  const app = Fastify(options) as unknown as FastifyInstance;
  app.decorate('ctx', ctx);
  app.decorateRequest('rawBody', undefined);

  registerValidation(app);
  registerErrorHandling(app);
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
        description: 'Public API (spec), dashboard management endpoints and the signed agent protocol.',
      },
      components: {
        securitySchemes: {
          apiToken: { type: 'http', scheme: 'bearer', description: 'API token (drv_...)' },
          session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard session' },
          agentSignature: { type: 'apiKey', in: 'header', name: 'X-Signature', description: 'CONTRACT §5' },
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

/**
 * A request Node's HTTP parser could not read (malformed, headers too large, too slow): answered
 * in the one error shape, then the connection is closed, as Node itself does.
 */
function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout', 'The request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('headers_too_large', 'The request headers are too large')
        : new AppError(
            'bad_request',
            'The request is not valid HTTP (for example, a Content-Length that does not match the body)',
          );
  this.log.debug({ err: error }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(refusal.toBody());
    socket.write(
      `HTTP/1.1 ${refusal.statusCode} ${STATUS_CODES[refusal.statusCode]}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * The order of refusals on every route: the caller first (401, CONTRACT §5 and the spec's
 * Authentication rules), then the body. Dashboard routes (tag `dashboard`, unless their schema
 * says `security: []`, as login does) get the session check in `onRequest`, before the body is
 * read; they are also described as needing a session in the OpenAPI document. Every route ends
 * its `preValidation` hooks with `surfaceBodyError`, after the agent signature and the API-token
 * hooks, so a body that is not JSON is refused only once the caller is known. Before all of
 * them, ids in the path are lower-cased.
 */
function orderRefusals(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { tags?: string[]; security?: unknown[] } | undefined;
    if (schema?.tags?.includes('dashboard') && schema.security?.length !== 0) {
      schema.security ??= [{ session: [] }];
      route.onRequest = [sessionHook, ...hooks(route.onRequest)];
    }
    route.preValidation = [...hooks(route.preValidation), surfaceBodyError];
    if (route.url.includes(':')) route.onRequest = [lowercaseIds, ...hooks(route.onRequest)];
  });
}

/** Ids are UUIDs, stored lower-case: an upper-case spelling in the path names the same resource. */
function lowercaseIds(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const params = request.params as Record<string, string>;
  for (const key of Object.keys(params)) {
    const value = params[key]!;
    if (UUID_REGEX.test(value)) params[key] = value.toLowerCase();
  }
  done();
}

function hooks<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
