import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD } from '../helpers/coordinator.js';
import { generateCases } from '../helpers/fuzz-cases.js';
import { describeOutcome, runCases, type FuzzOutcome } from '../helpers/fuzz-client.js';
import { startFuzzFixture, type FuzzFixture } from '../helpers/fuzz-fixture.js';
import { fuzzCasesPerRoute, fuzzSeed, Random } from '../helpers/fuzz-random.js';
import { fuzzRoutes, type FuzzRoute, type OpenApiDocument } from '../helpers/fuzz-routes.js';

/**
 * Every route the coordinator serves, called with seeded random requests: real and bogus ids,
 * hostile path segments and query strings, bodies made from the route's schema and then broken,
 * bodies that are not JSON, and every kind of credential. Whatever arrives, the coordinator
 * answers within a bound, never with a 5xx, and every refusal has the documented error body.
 *
 * Replay a failure with its seed: DROVER_FUZZ_SEED=<seed> pnpm exec vitest run test/e2e/route-fuzz.test.ts
 * (DROVER_FUZZ_CASES sets the number of cases per route, 80 by default: over 6,000 requests).
 */

const SEED = fuzzSeed();
const CASES_PER_ROUTE = fuzzCasesPerRoute();
const CONCURRENCY = 6;
/** Far above any answer here (the slowest documented one is a sync run's 1 s wait): a hang, not a slow answer. */
const ANSWER_BOUND_MS = 10_000;

describe('route fuzz', () => {
  let fx: FuzzFixture;
  let routes: FuzzRoute[];

  beforeAll(async () => {
    fx = await startFuzzFixture();
    const openapi = await fx.t.api.get<OpenApiDocument>('/openapi.json');
    expect(openapi.status).toBe(200);
    routes = fuzzRoutes(fx.t.coordinator.app, openapi.body);
  }, 60_000);
  afterAll(async () => {
    await fx?.t.close();
    await fx?.provider.close();
  });

  it('enumerates every route the coordinator serves, with its schemas and credentials', () => {
    expect(routes.length).toBeGreaterThan(60);
    const find = (method: string, path: string) => routes.find((r) => r.method === method && r.path === path);
    expect(find('POST', '/v1/triggers/:id/run')).toMatchObject({ auth: 'apiToken', params: ['id'] });
    expect(find('PUT', '/v1/agent/workflows')).toMatchObject({ auth: 'agentSignature', body: { type: 'object' } });
    expect(find('DELETE', '/v1/orgs/:orgId/apps/:appId/devices/:deviceId')).toMatchObject({
      auth: 'session',
      params: ['orgId', 'appId', 'deviceId'],
    });
    expect(find('GET', '/v1/orgs/:orgId/jobs')?.query).toHaveProperty('limit');
    expect(find('GET', '/api/jobs/:id')).toBeDefined();
    expect(routes.filter((r) => r.body !== null).length).toBeGreaterThan(25);
  });

  it('makes the same requests from the same seed, so that a failure can be replayed', () => {
    const sent = (seed: number) =>
      generateCases(routes, fx, seed, 3).map((c) => [
        c.method,
        c.target,
        c.credential,
        c.headers,
        c.body?.toString('hex'),
      ]);
    expect(sent(SEED)).toEqual(sent(SEED));
    expect(sent(SEED + 1)).not.toEqual(sent(SEED));
  });

  it(`answers seeded random requests to every route without a 5xx, a hang or a malformed error (seed ${SEED})`, async () => {
    // Routes interleaved (in a seeded order); deletions after the rest, so that it runs against the
    // whole fixture; sign-outs (which end the fuzzer's sessions) last, so that the deletions reach
    // their handlers too, not only the 401 of an ended session.
    const cases = new Random(SEED).shuffle(generateCases(routes, fx, SEED, CASES_PER_ROUTE));
    const origin = new URL(fx.t.url);
    const options = { concurrency: CONCURRENCY, timeoutMs: ANSWER_BOUND_MS };
    const outcomes: FuzzOutcome[] = [];
    const endsSessions = ['/v1/auth/logout', '/v1/auth/logout-everywhere', '/v1/auth/password'];
    const phaseOf = (c: (typeof cases)[number]) =>
      endsSessions.includes(c.route.path) ? 2 : c.method === 'DELETE' ? 1 : 0;
    for (const phase of [0, 1, 2]) {
      outcomes.push(
        ...(await runCases(
          origin,
          cases.filter((c) => phaseOf(c) === phase),
          fx.credentials,
          options,
        )),
      );
    }

    const failed = outcomes.filter((o) => o.problems.length > 0);
    expect(
      failed.map(describeOutcome),
      `${failed.length} of ${outcomes.length} fuzz cases broke the contract; ` +
        `replay with DROVER_FUZZ_SEED=${SEED} pnpm exec vitest run test/e2e/route-fuzz.test.ts`,
    ).toEqual([]);
    expect(outcomes.length).toBe(routes.length * CASES_PER_ROUTE);

    // The fuzzer reached the handlers, not only the refusals in front of them: a success, or the
    // redirect of a route whose success is one (a sign-in sent to the provider, an OAuth callback).
    const routesAnswered2xx = new Set(
      outcomes
        .filter((o) => o.fuzzCase.method === o.fuzzCase.route.method && o.answer && o.answer.status < 400)
        .map((o) => `${o.fuzzCase.route.method} ${o.fuzzCase.route.path}`),
    );
    // A single sign-on's callback succeeds only for a real sign-in at the provider
    // (test/e2e/sso.test.ts): the fuzzer reaches its refusals.
    const reachable = routes.filter((r) => `${r.method} ${r.path}` !== 'GET /v1/auth/oidc/callback');
    expect(
      routesAnswered2xx.size / reachable.length,
      `routes with a 2xx answer: ${[...routesAnswered2xx].join(', ')}`,
    ).toBeGreaterThan(0.75);

    // And the coordinator still serves ordinary requests.
    // Signing in again (the fuzzer signed its sessions out, and its wrong passwords slow sign-in down).
    const owner = await vi.waitFor(() => fx.t.api.login(OWNER_EMAIL, OWNER_PASSWORD), {
      timeout: 30_000,
      interval: 500,
    });
    const orgs = await owner.get('/orgs');
    expect(orgs.status).toBe(200);
    expect((await fx.t.api.get('/openapi.json')).status).toBe(200);
  }, 240_000);
});
