import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { named, nameAnswers } from '../../src/http/schemas/named.js';

/** The named schemas of the OpenAPI document (test/e2e/openapi.test.ts reads the document itself). */

const Thing = named('NamedSchemasTestThing', {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string' }, size: { type: 'integer' } },
  examples: [{ id: 'a', size: 1 }],
} as const);

/** An app answering `answer` for `schema` at GET /. */
async function appAnswering(schema: object, answer: unknown) {
  const app = Fastify();
  nameAnswers(app);
  app.get('/', { schema: { response: { 200: schema } } }, async () => answer);
  await app.ready();
  return app;
}

describe('named schemas', () => {
  it('serialize a whole answer as the schema itself: its fields, and nothing it does not declare', async () => {
    const app = await appAnswering(Thing, { id: 'a', size: 2, secret: 'never sent' });
    expect((await app.inject('/')).json()).toEqual({ id: 'a', size: 2 });
    await app.close();
  });

  it('serialize an answer that adds its own description and examples as the schema itself', async () => {
    const schema = { ...Thing, description: 'a thing', examples: [{ id: 'b' }] };
    const app = await appAnswering(schema, { id: 'b', secret: 'never sent' });
    expect((await app.inject('/')).json()).toEqual({ id: 'b' });
    await app.close();
  });

  it('serialize lists and fields of a named schema', async () => {
    const list = { type: 'array', items: Thing };
    const app = await appAnswering(list, [{ id: 'a', secret: 1 }]);
    expect((await app.inject('/')).json()).toEqual([{ id: 'a' }]);
    await app.close();
  });

  it('refuse two schemas of one name', () => {
    expect(() => named('NamedSchemasTestThing', { type: 'object' })).toThrow(/Two schemas are named/);
  });

  it('refuse, when the route is added, a copy of a named schema that changes more than its annotations', async () => {
    const changed = { ...Thing, required: ['id', 'size'] };
    await expect(appAnswering(changed, {})).rejects.toThrow(/differs from its declaration/);
    const nested = { type: 'array', items: { ...Thing, description: 'changed' } };
    await expect(appAnswering(nested, [])).rejects.toThrow(/nested in an answer is a copy/);
  });
});
