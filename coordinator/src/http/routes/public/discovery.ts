import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiToken } from '../../../domain/model/api-tokens.js';
import { DiscoveryCache } from '../../../domain/discovery/discovery-cache.js';
import { readLimitBody } from '../../../domain/discovery/read-rate-limiter.js';
import { apiCallerOf } from '../../auth/api-token.js';
import { errorResponses, nullableTimestamp, uuid } from '../../schemas/common.js';
import { noQuery, PublicAgentSchema, RateLimitSchema, WorkflowParamSchema } from '../../schemas/management.js';
import { GrantSchema } from '../manage/api-tokens.js';
import { publicTokenExample, workflowExample } from '../../schemas/examples.js';
import { listOf } from '../../schemas/examples.js';
import { named } from '../../schemas/named.js';

/**
 * Token discovery (docs/management.md): any valid API token may read its own metadata and
 * list the agents and workflows its grants reach. Every call counts against the token read
 * limit; `/agents`, `/devices` and `/workflows` are audited as `api_token.discover`.
 *
 * The fields below (and PublicAgentSchema, the specification's agent) are the whole public
 * representation: the response schemas drop everything else (publicKey, secretsKeys, steps, the
 * token hash).
 */

export const PublicTokenSchema = named('TokenInfo', {
  type: 'object',
  examples: [publicTokenExample],
  required: ['name', 'scopes', 'rateLimit', 'expiresAt'],
  properties: {
    name: { type: 'string' },
    scopes: { type: 'array', items: GrantSchema },
    rateLimit: RateLimitSchema,
    expiresAt: nullableTimestamp,
  },
} as const);

export const PublicWorkflowSchema = named('PublicWorkflow', {
  type: 'object',
  examples: [workflowExample],
  required: ['id', 'agentId', 'name', 'description', 'version', 'paramsSchema'],
  properties: {
    id: uuid,
    agentId: uuid,
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    version: { type: ['string', 'null'] },
    paramsSchema: { type: ['array', 'null'], items: WorkflowParamSchema },
  },
} as const);

export const ReadLimitBodySchema = {
  type: 'object',
  required: ['statusCode', 'error', 'message', 'scope', 'window', 'limit', 'observed'],
  properties: {
    statusCode: { type: 'integer' },
    error: { type: 'string', enum: ['Too Many Requests'] },
    message: { type: 'string' },
    scope: { type: 'string', enum: ['token_read'] },
    window: { type: 'string', enum: ['minute'] },
    limit: { type: 'integer' },
    observed: { type: 'integer' },
  },
} as const;

const routeSchema = (operationId: string, summary: string, ok: object) => ({
  operationId,
  summary,
  tags: ['public'],
  querystring: noQuery,
  response: { 200: ok, 429: ReadLimitBodySchema, ...errorResponses(401, 422) },
});

type DiscoverResource = 'agents' | 'devices' | 'workflows';

/** A token that passed the read limit, with the change counter as read for its request. */
interface Admitted {
  token: ApiToken;
  generation: number;
}

export async function discoveryRoutes(app: FastifyInstance): Promise<void> {
  const { repos, readLimiter, audit } = app.ctx;
  const discovery = new DiscoveryCache(repos);

  const admitted = new WeakMap<FastifyRequest, Admitted>();
  const admittedOf = (request: FastifyRequest) => admitted.get(request)!;

  /**
   * `onRequest` of every discovery route, so that the token (401) and the read limit (429) come
   * before anything about the query string: admits the request's API token once it passed the
   * read limit, or sends the spec's 429. The first refusal per token and window is audited.
   */
  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const { token, generation } = apiCallerOf(request);
    const decision = readLimiter.hit(token.id);
    if (decision.allowed) {
      admitted.set(request, { token, generation });
      return undefined;
    }
    const body = readLimitBody(decision);
    if (decision.firstBlock) {
      await audit.record({
        orgId: token.orgId,
        actorType: 'api_token',
        actorId: token.id,
        action: 'rate_limit.block',
        targetType: 'api_token',
        targetId: token.id,
        metadata: {
          scope: body.scope,
          window: body.window,
          limit: body.limit,
          observed: body.observed,
          path: request.routeOptions.url,
        },
      });
    }
    return reply.code(429).header('retry-after', String(decision.retryAfter)).send(body);
  }

  const discovered = (token: ApiToken, resource: DiscoverResource, count: number) =>
    audit.record({
      orgId: token.orgId,
      actorType: 'api_token',
      actorId: token.id,
      action: 'api_token.discover',
      metadata: { resource, count },
    });

  app.get(
    '/token',
    { onRequest: admit, schema: routeSchema('getToken', "The calling token's own metadata", PublicTokenSchema) },
    async (request) => {
      const { token } = admittedOf(request);
      return { name: token.name, scopes: token.scopes, rateLimit: token.rateLimit, expiresAt: token.expiresAt };
    },
  );

  /**
   * The cached answers' JSON, made once per cached list by the route's own response serializer
   * (so its schema still decides what goes out) and sent as it is until the list is recomputed:
   * serializing the same 2 KB list at every call was about a tenth of a discovery call's CPU.
   */
  const json = new WeakMap<readonly object[], string>();
  const sendList = (reply: FastifyReply, list: readonly object[]) => {
    let body = json.get(list);
    if (body === undefined) {
      body = reply.serialize(list) as string; // fast-json-stringify's: always a string
      json.set(list, body);
    }
    return reply.type('application/json; charset=utf-8').send(body);
  };

  const listAgents = (resource: 'agents' | 'devices') => async (request: FastifyRequest, reply: FastifyReply) => {
    const { token, generation } = admittedOf(request);
    const agents = await discovery.agents(token, generation);
    await discovered(token, resource, agents.length);
    return sendList(reply, agents);
  };
  const agentList = listOf(PublicAgentSchema);
  app.get(
    '/agents',
    {
      onRequest: admit,
      schema: routeSchema('discoverAgents', 'Agents reachable by the token, most recently registered first', agentList),
    },
    listAgents('agents'),
  );
  app.get(
    '/devices',
    { onRequest: admit, schema: routeSchema('discoverDevices', 'Alias of GET /agents; identical response', agentList) },
    listAgents('devices'),
  );

  app.get(
    '/workflows',
    {
      onRequest: admit,
      schema: routeSchema(
        'discoverWorkflows',
        'Workflows the token can run, ascending by name',
        listOf(PublicWorkflowSchema),
      ),
    },
    async (request, reply) => {
      const { token, generation } = admittedOf(request);
      const workflows = await discovery.workflows(token, generation);
      await discovered(token, 'workflows', workflows.length);
      return sendList(reply, workflows);
    },
  );
}
