import type { FastifyInstance, FastifyReply } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { servedDocument } from '../openapi-document.js';
import { setPageHeaders } from './dashboard/page-headers.js';

/**
 * Swagger UI's light grey and green labels fall short of WCAG AA contrast (4.5:1) on white: the
 * same colours, darker. Served as a stylesheet of /docs (no inline style under the CSP).
 */
const CONTRAST_CSS = `
.swagger-ui .info .title small.version-stamp { background-color: #3b6e00; }
.swagger-ui .info .url, .swagger-ui .info a { color: #0b5cad; }
.swagger-ui .btn.authorize, .swagger-ui .btn.authorize span { color: #1f6b3a; border-color: #1f6b3a; }
.swagger-ui .btn.authorize svg { fill: #1f6b3a; }
.swagger-ui .opblock.opblock-get .opblock-summary-method { background: #1a5fa8; }
.swagger-ui .opblock.opblock-post .opblock-summary-method { background: #1d7a4f; }
.swagger-ui .opblock.opblock-put .opblock-summary-method { background: #a8530a; }
.swagger-ui .opblock.opblock-patch .opblock-summary-method { background: #0f6e68; }
.swagger-ui .opblock.opblock-delete .opblock-summary-method { background: #b3261e; }
.swagger-ui .parameter__in, .swagger-ui .parameter__type, .swagger-ui .prop-format, .swagger-ui .parameter__deprecated { color: #4a5260; }
.swagger-ui .json-schema-2020-12-expand-deep-button { color: #4a5260; }
`;

/** Where the interactive API reference is served. */
export const API_DOCS_PREFIX = '/docs';

/**
 * The interactive API reference at `/docs`: Swagger UI over the OpenAPI document, from the
 * files bundled in `@fastify/swagger-ui` (no CDN: it works offline), without credentials (the
 * document is public at `/v1/openapi.json`; "Try it out" calls take a token like any client).
 * Its pages carry the dashboard's security headers and its strict Content-Security-Policy:
 * Swagger UI's bundle needs no inline script or style attribute (docs/decisions.md, "/docs").
 */
export async function apiDocsRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onSend', async (_request, reply) => {
    setPageHeaders(reply);
  });
  // The document at /docs/json and /docs/yaml as /v1/openapi.json serves it: serialized once
  // (openapi-document.ts), where Swagger UI's own routes serialize it per call (the YAML ~1 s).
  const documentRoutes: Record<string, (reply: FastifyReply) => FastifyReply> = {
    [`${API_DOCS_PREFIX}/json`]: (reply) =>
      reply.type('application/json; charset=utf-8').send(servedDocument(app).json),
    [`${API_DOCS_PREFIX}/yaml`]: (reply) => reply.type('application/x-yaml').send(servedDocument(app).yaml()),
  };
  app.addHook('onRequest', async (request, reply) => {
    const serve = documentRoutes[request.routeOptions.url ?? ''];
    if (serve) return serve(reply);
  });
  await app.register(swaggerUi, {
    routePrefix: API_DOCS_PREFIX,
    // BaseLayout: without the top bar (its "Explore" box loads any document by URL).
    // Without syntax colours: some of its colours fall short of contrast on its dark code blocks.
    uiConfig: {
      layout: 'BaseLayout',
      deepLinking: true,
      displayOperationId: true,
      docExpansion: 'list',
      syntaxHighlight: false,
    },
    theme: { title: 'Drover API reference', css: [{ filename: 'drover.css', content: CONTRAST_CSS }] },
  });
}
