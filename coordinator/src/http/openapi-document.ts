import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';

/** The OpenAPI document as served: JSON, and YAML made the first time it is asked for. */
export interface ServedDocument {
  readonly json: string;
  yaml(): string;
}

/** By coordinator (its context): the `/v1` and `/docs` plugins see the same document. */
const served = new WeakMap<object, { publicUrl: string; document: ServedDocument }>();

/**
 * The OpenAPI document with the coordinator's address as its server, serialized once per address
 * (the address is known once listening, with `--port 0`; it does not change after). Public and
 * unauthenticated: serializing it per call took ~70 ms of the event loop for the JSON and about a
 * second for the YAML (530 KB), which any visitor could ask for in a loop.
 */
export function servedDocument(app: FastifyInstance): ServedDocument {
  const publicUrl = app.ctx.config.publicUrl;
  const cached = served.get(app.ctx);
  if (cached?.publicUrl === publicUrl) return cached.document;
  const spec = { ...app.swagger(), servers: [{ url: publicUrl }] };
  let yaml: string | undefined;
  const document: ServedDocument = {
    json: JSON.stringify(spec),
    yaml: () => (yaml ??= stringify(spec)),
  };
  served.set(app.ctx, { publicUrl, document });
  return document;
}
