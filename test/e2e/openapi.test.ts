import type { Coordinator } from '@drover/coordinator';
import { randomUUID } from 'node:crypto';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { issueApiToken } from '../helpers/tokens.js';
import {
  DOCUMENT_FILE,
  REGENERATE,
  renderApiFiles,
  servedWithoutServers,
  staleFiles,
  TYPES_FILE,
} from '../../scripts/lib/api-files.js';

/** `GET /v1/openapi.json` describes every route the app serves, with its response schemas. */

interface Route {
  method: string;
  path: string;
}

/** Every (method, path) registered on the app, read from Fastify's route tree. */
function registeredRoutes(app: Coordinator['app']): Route[] {
  const routes: Route[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = line.match(/^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/);
    if (!match) continue;
    stack.length = match[1]!.length / 4;
    stack.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, path: stack.join('') });
  }
  return routes;
}

/** The dashboard's pages and files (`/`, `/login`, `/account`, `/device`, `/orgs/...`, `/chat/:provider/finish`, `/assets/...`, `/favicon.ico`): for browsers, not API operations. */
const isDashboardFile = (path: string) =>
  /^\/(login|account|device|orgs\/.*|chat\/:provider\/finish|assets\/.*|favicon\.ico)?$/.test(path);

/**
 * The OpenAPI paths a registered route may be documented at. Where routes name the parameter at
 * the same place differently (`/chat-integrations/:provider/connect` and
 * `/chat-integrations/:integrationId`), Fastify's tree prints both names (`:provider|:integrationId`).
 */
const openApiPaths = (path: string): string[] =>
  path
    .split('/')
    .map((segment) => segment.split('|'))
    .reduce<string[]>(
      (paths, names) => paths.flatMap((p) => names.map((n) => (p === '' && n === '' ? '' : `${p}/${n}`))),
      [''],
    )
    .map((p) => p.replace(/:(\w+)/g, '{$1}'));

/** The documented operation of a registered route, if any. */
const operationOf = (spec: { paths: Record<string, Record<string, Operation>> }, route: Route) =>
  openApiPaths(route.path)
    .map((p) => spec.paths[p]?.[route.method.toLowerCase()])
    .find((op) => op !== undefined);

/** The interactive reference (Swagger UI's page and files, `/docs/...`): for people, not API operations. */
const isApiDocsFile = (path: string) => path.startsWith('/docs');

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Every string value of a JSON document (not its keys), with where it is. */
function stringValues(value: unknown, at = '$'): { at: string; text: string }[] {
  if (typeof value === 'string') return [{ at, text: value }];
  if (Array.isArray(value)) return value.flatMap((item, i) => stringValues(item, `${at}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => stringValues(item, `${at}.${key}`));
  }
  return [];
}

interface Media {
  schema?: { format?: string; items?: unknown };
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string }[];
  requestBody?: { required?: boolean; content: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media>; headers?: Record<string, unknown> }>;
}

/** The examples of a body (`example`, or the values of `examples`). */
const examplesOf = (media: Media): unknown[] =>
  media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((e) => e.value);

/** For load balancers and Prometheus (docs/operations.md), not part of the API. */
const OPERATIONS_ENDPOINTS = ['/healthz', '/metrics'];

describe('the OpenAPI document', () => {
  let t: TestCoordinator;
  let spec: {
    openapi: string;
    info: { title: string };
    servers: { url: string }[];
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, { examples?: unknown[] }> };
  };
  let routes: Route[];
  beforeAll(async () => {
    t = await startTestCoordinator();
    const res = await t.api.get('/openapi.json');
    expect(res.status).toBe(200);
    spec = res.body;
    routes = registeredRoutes(t.coordinator.app).filter(
      (r) =>
        r.method !== 'HEAD' &&
        r.path !== '/v1/openapi.json' &&
        !OPERATIONS_ENDPOINTS.includes(r.path) &&
        !isDashboardFile(r.path) &&
        !isApiDocsFile(r.path),
    );
  });
  afterAll(() => t?.close());

  it('is served without credentials as OpenAPI 3', () => {
    expect(spec.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(spec.info.title).toContain('Drover');
  });

  it('names the real listening address as its server, even when started on port 0', () => {
    expect(spec.servers).toEqual([{ url: t.url }]);
  });

  it('reads the registered routes (the check below is not vacuous)', () => {
    expect(routes).toEqual(
      expect.arrayContaining([
        { method: 'POST', path: '/v1/auth/login' },
        { method: 'GET', path: '/v1/orgs/:orgId/members' },
        { method: 'POST', path: '/v1/agent/enroll' },
      ]),
    );
    expect(routes.length).toBeGreaterThan(10);
  });

  it('lists every registered route except itself, the operations endpoints, the dashboard files and the reference at /docs', () => {
    const missing = routes.filter((r) => !operationOf(spec, r));
    expect(missing).toEqual([]);
    expect(spec.paths['/v1/openapi.json']).toBeUndefined();
    expect(spec.paths['/healthz']).toBeUndefined();
  });

  it('cites no document its readers do not have (planning files, the specification)', () => {
    const citations = stringValues(spec).filter(({ text }) => /CONTRACT|§|\bspec\b|specification/i.test(text));
    expect(citations).toEqual([]);
  });

  it('gives every operation a success response schema, error responses, a summary and a tag', () => {
    const problems: string[] = [];
    for (const { method, path } of routes) {
      const op = operationOf(spec, { method, path });
      if (!op) continue; // reported by the test above
      const name = `${method} ${path}`;
      const responses = Object.entries(op.responses ?? {});
      const success = responses.filter(([status]) => /^2\d\d$/.test(status));
      const redirects = responses.filter(([status]) => /^3\d\d$/.test(status));
      if (success.length === 0 && redirects.length === 0) problems.push(`${name}: no 2xx (or 3xx) response`);
      for (const [status, response] of success) {
        const schemas = Object.values(response.content ?? {}).filter((c) => c.schema !== undefined);
        if (status !== '204' && schemas.length === 0) problems.push(`${name}: ${status} has no schema`);
      }
      if (!responses.some(([status]) => /^4\d\d$/.test(status))) problems.push(`${name}: no 4xx response`);
      if (!op.summary) problems.push(`${name}: no summary`);
      if (!op.tags?.length) problems.push(`${name}: no tag`);
    }
    expect(problems).toEqual([]);
  });

  it("describes what routes read and answer beyond their schemas: bytes, streams, headers, and the body's refusals", async () => {
    const blobs = spec.paths['/v1/storage/blobs/{fileId}']!;
    expect(Object.keys(blobs.put!.requestBody!.content)).toEqual(['application/octet-stream']);
    expect(Object.keys(blobs.get!.responses!['200']!.content!)).toEqual(['application/octet-stream']);
    expect(Object.keys(blobs.get!.responses!['206']!.content!)).toEqual(['application/octet-stream']);
    expect(Object.keys(spec.paths['/v1/agent/stream']!.get!.responses!['200']!.content!)).toEqual([
      'text/event-stream',
    ]);
    for (const path of ['/v1/triggers/{id}/run', '/v1/orgs/{orgId}/triggers/{triggerId}/run']) {
      const op = spec.paths[path]!.post!;
      expect(op.parameters).toContainEqual(expect.objectContaining({ name: 'idempotency-key', in: 'header' }));
      expect(Object.keys(op.responses!['429']!.headers!)).toEqual(['retry-after']);
    }
    const problems: string[] = [];
    for (const { name, op } of operations()) {
      const has = (status: string) => op.responses?.[status] !== undefined;
      if (/^(POST|PUT|PATCH) /.test(name) && !has('413')) problems.push(`${name}: no 413`);
      const json = op.requestBody?.content['application/json'];
      if (json && !['400', '415', '422'].every(has)) problems.push(`${name}: a JSON body without 400, 415 or 422`);
      if (has('429') && !op.responses!['429']!.headers?.['retry-after'])
        problems.push(`${name}: 429 without Retry-After`);
    }
    expect(problems).toEqual([]);
    // What a 400 for a Content-Type that is no media type says.
    const res = await fetch(`${t.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'foo' },
      body: '{}',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'bad_request',
      message: 'The Content-Type header is not a media type (type/subtype); send application/json',
    });
  });

  it("lists what a DELETE's body and a path's malformed percent-encoding get before the route (400, 413, 415), and 503 everywhere", async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'delete'] },
    ]);
    const file = `/v1/storage/files/${randomUUID()}`;
    const sent = [
      { method: 'DELETE', path: file, headers: { 'content-type': 'foo' }, body: '{}', status: 400 },
      { method: 'DELETE', path: file, headers: { 'content-encoding': 'gzip' }, body: '{}', status: 415 },
      { method: 'DELETE', path: file, headers: {}, body: `"${'x'.repeat(1_048_576)}"`, status: 413 },
      { method: 'GET', path: '/v1/storage/files/%zz', headers: {}, body: undefined, status: 400 },
      { method: 'GET', path: '/v1/storage/files/%zz/download-url', headers: {}, body: undefined, status: 400 },
    ];
    const undocumented: string[] = [];
    for (const { method, path, headers, body, status } of sent) {
      const res = await fetch(`${t.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...headers },
        body,
      });
      expect(res.status, `${method} ${path}`).toBe(status);
      const documented = path.replace(/^\/v1\/storage\/files\/[^/]+/, '/v1/storage/files/{id}');
      const op = spec.paths[documented]![method.toLowerCase()]!;
      if (op.responses?.[String(status)] === undefined) undocumented.push(`${method} ${documented}: ${status}`);
    }
    expect(undocumented).toEqual([]);
    // Every route that can get them lists them.
    const problems: string[] = [];
    for (const { name, op } of operations()) {
      const has = (status: string) => op.responses?.[status] !== undefined;
      if (/^DELETE /.test(name) && !['400', '413', '415'].every(has)) problems.push(`${name}: no 400, 413 or 415`);
      if (name.includes('{') && !has('400')) problems.push(`${name}: a path parameter without 400`);
      // Any route, while the coordinator shuts down or its database is out of reach.
      const unavailable = op.responses?.['503'];
      if (unavailable?.headers?.['retry-after'] === undefined) problems.push(`${name}: no 503 with Retry-After`);
    }
    expect(problems).toEqual([]);
  });

  it('marks a body the route takes or leaves out as optional, and only such a body', async () => {
    const releases = '/v1/orgs/{orgId}/apps/{appId}/releases/{releaseId}';
    for (const path of [
      `${releases}/publish`,
      `${releases}/yank`,
      `${releases}/rollout/advance`,
      '/v1/jobs/{id}/cancel',
    ]) {
      expect(spec.paths[path]!.post!.requestBody!.required, path).toBe(false);
    }
    expect(spec.paths['/v1/orgs/{orgId}/apps']!.post!.requestBody!.required).toBe(true);
    expect(spec.paths['/v1/storage/blobs/{fileId}']!.put!.requestBody!.required).toBe(true);
    // What the document calls optional is: an enrollment token made without a body.
    expect(spec.paths['/v1/orgs/{orgId}/enrollment-tokens']!.post!.requestBody!.required).toBe(false);
    const res = await t.owner.request('POST', `/orgs/${t.orgId}/enrollment-tokens`);
    expect(res.status).toBe(201);
  });

  const operations = () =>
    Object.entries(spec.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
    );

  it('gives every operation a unique camelCase operationId', () => {
    const ids = operations().map(({ name, op }) => [name, op.operationId] as const);
    expect(ids.length).toBeGreaterThan(50);
    expect(ids.filter(([, id]) => !id || !/^[a-z][a-zA-Z0-9]*$/.test(id))).toEqual([]);
    const seen = new Map<string, string>();
    const duplicates = ids.filter(([name, id]) => seen.has(id!) || !seen.set(id!, name));
    expect(duplicates).toEqual([]);
  });

  it('gives every request body and every success answer an example that its schema accepts', () => {
    const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
    const problems: string[] = [];
    // A schema refers to the named ones as `#/components/schemas/<name>`: compiled beside them.
    const validatorOf = (schema: object) => ajv.compile({ ...schema, components: spec.components });
    const check = (where: string, media: Media) => {
      // A file's bytes, uploaded or downloaded, have no JSON example.
      if (media.schema?.format === 'binary') return;
      const examples = examplesOf(media);
      if (examples.length === 0) problems.push(`${where}: no example`);
      const validate = validatorOf(media.schema ?? {});
      for (const example of examples) {
        if (!validate(example)) problems.push(`${where}: example refused: ${ajv.errorsText(validate.errors)}`);
      }
    };
    for (const [name, schema] of Object.entries(spec.components.schemas)) {
      if (name === 'ErrorBody') continue;
      const examples = schema.examples ?? [];
      if (examples.length === 0) problems.push(`${name}: no example`);
      const validate = validatorOf(schema);
      for (const example of examples) {
        if (!validate(example)) problems.push(`${name}: example refused: ${ajv.errorsText(validate.errors)}`);
      }
    }
    for (const { name, op } of operations()) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) check(`${name} body (${type})`, media);
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!/^2\d\d$/.test(status)) continue;
        for (const [type, media] of Object.entries(response.content ?? {})) check(`${name} ${status} (${type})`, media);
      }
    }
    expect(problems).toEqual([]);
  });

  it(`is the committed ${DOCUMENT_FILE}, whose types the dashboard and the CLI use (${TYPES_FILE})`, async () => {
    const stale = staleFiles(await renderApiFiles(servedWithoutServers(spec)));
    expect(stale, `not what the coordinator serves: run \`${REGENERATE}\` and commit`).toEqual([]);
  });

  it('describes each shape it answers with once, by name, and refers to it', () => {
    const names = Object.keys(spec.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['Job', 'JobDetail', 'Trigger', 'Agent', 'Workflow', 'ApiToken']));
    const answer = (path: string, method: string, status: string) =>
      spec.paths[path]?.[method]?.responses?.[status]?.content?.['application/json']?.schema;
    // A whole answer, an item of a list, and a field.
    expect(answer('/v1/orgs/{orgId}/triggers/{triggerId}', 'get', '200')).toEqual({
      allOf: [{ $ref: '#/components/schemas/Trigger' }],
    });
    expect(answer('/v1/orgs/{orgId}/jobs', 'get', '200')).toMatchObject({
      items: { $ref: '#/components/schemas/Job' },
    });
    expect(spec.components.schemas.Trigger).toMatchObject({
      properties: { lastOccurrences: { items: { $ref: '#/components/schemas/CronOccurrence' } } },
    });
  });

  it('leaves no shape vague: an object lists its properties or says what its other keys hold, a field has a type', () => {
    const vague: string[] = [];
    const visit = (schema: unknown, at: string): void => {
      if (Array.isArray(schema)) return schema.forEach((item, i) => visit(item, `${at}[${i}]`));
      if (typeof schema !== 'object' || schema === null) return;
      const s = schema as Record<string, unknown>;
      const types = [s.type].flat();
      const said = ['$ref', 'allOf', 'anyOf', 'oneOf', 'enum', 'const', 'type'].some((k) => k in s);
      if (!said) vague.push(`${at}: no type`);
      // An empty body (`maxProperties: 0`) holds nothing, and says so.
      if (types.includes('object') && !s.properties && s.additionalProperties === undefined && s.maxProperties !== 0) {
        vague.push(`${at}: an object without properties`);
      }
      for (const [key, value] of Object.entries(s)) {
        if (key === 'properties') {
          for (const [name, property] of Object.entries(value as object)) visit(property, `${at}.${name}`);
        } else if (['items', 'additionalProperties', 'allOf', 'anyOf', 'oneOf'].includes(key)) visit(value, at);
      }
    };
    for (const [name, schema] of Object.entries(spec.components.schemas)) visit(schema, name);
    for (const { name, op } of operations()) {
      for (const media of Object.values(op.requestBody?.content ?? {})) visit(media.schema, `${name} body`);
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        for (const media of Object.values(response.content ?? {})) visit(media.schema, `${name} ${status}`);
      }
    }
    expect(vague).toEqual([]);
  });

  it('serves the interactive reference at /docs: HTML whose scripts and styles load from the coordinator', async () => {
    const page = await fetch(`${t.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.filter((a) => a.endsWith('.js')).length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset, 'an asset of this origin').toMatch(/^\/docs\//);
      const res = await fetch(`${t.url}${asset}`);
      expect(res.status, asset).toBe(200);
      await res.arrayBuffer();
    }
    // The page reads the same document as /v1/openapi.json.
    const json = await fetch(`${t.url}/docs/json`);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await json.json()).toEqual(spec);
  });

  it('serves the document as YAML too, with the same address and the page headers', async () => {
    const first = await fetch(`${t.url}/docs/yaml`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/x-yaml');
    expect(first.headers.get('x-frame-options')).toBe('DENY');
    const text = await first.text();
    expect(text).toMatch(/^openapi: 3\./m);
    expect(text).toContain(`servers:\n  - url: ${t.url}\n`);
    expect(text).toContain('  /v1/triggers/{id}/run:\n');
    expect(await (await fetch(`${t.url}/docs/yaml`)).text()).toBe(text);
  });
});
