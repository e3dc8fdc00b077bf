import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { BlobUrlQuery } from '../../storage/blob-url.js';
import { RangeNotSatisfiable } from '../../storage/local-transfer.js';
import { errorResponses, idParams } from '../schemas/common.js';
import { storedBlobExample } from '../schemas/examples.js';

type BlobRequest = { Params: { fileId: string }; Querystring: BlobUrlQuery };

/** Not typed: a malformed URL (a parameter sent twice, say) is the signer's 403, not a 422. */
const BlobQuerySchema = {
  type: 'object',
  properties: {
    m: { description: 'the method the URL is signed for: PUT or GET (a string)' },
    exp: { description: 'expiry, Unix seconds (a string of digits)' },
    n: { description: 'nonce, so that every URL is new (a string)' },
    sig: { description: 'HMAC-SHA256, base64url (a string)' },
  },
} as const;

const StoredBlobSchema = {
  type: 'object',
  required: ['fileId', 'size', 'sha256'],
  properties: { fileId: { type: 'string' }, size: { type: 'integer' }, sha256: { type: 'string' } },
  examples: [storedBlobExample],
} as const;

/** Downloads are streams of bytes: never serialized, described for the OpenAPI document. */
const BlobBytesSchema = { type: 'string', format: 'binary' } as const;

/**
 * The local backend's presigned URLs (docs/storage.md): `PUT` and `GET /v1/storage/blobs/:fileId`
 * with `m`, `exp` and `sig` in the query. No other credential: the URL is one. The PUT body is any
 * content type, streamed to disk as it arrives (this plugin replaces the JSON parser with one that
 * hands the raw stream through, so nothing is buffered and the API body limit does not apply;
 * DROVER_MAX_FILE_BYTES does).
 */
export async function storageBlobRoutes(app: FastifyInstance): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
  // A refusal sent before the body was read: close the connection rather than read gigabytes.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.method === 'PUT' && !request.raw.complete) void reply.header('connection', 'close');
    done(null, payload);
  });
  const transfers = () => app.ctx.files.transfers;

  app.put<BlobRequest>(
    '/storage/blobs/:fileId',
    {
      schema: {
        operationId: 'uploadBlob',
        summary: 'Upload the bytes of a pending file through its presigned URL (local backend)',
        tags: ['public'],
        security: [], // the URL's own signature is the credential
        params: idParams('fileId'),
        querystring: BlobQuerySchema,
        response: { 200: StoredBlobSchema, ...errorResponses(403, 404, 409, 413, 422) },
      },
      // The bytes are read as a stream (above): described, never validated.
      config: {
        documented: {
          body: { ...BlobBytesSchema, description: "the file's bytes, any content type" },
          consumes: ['application/octet-stream'],
        },
      },
    },
    async (request, reply) => {
      const stored = await transfers().receive(
        request.params.fileId,
        request.query,
        request.raw,
        request.headers['content-length'],
        // `Expect: 100-continue`: the client sends its bytes once told the upload is accepted, so
        // that a refusal (403, 404, 409, 413) comes before any of them (http/slow-clients.ts).
        () => {
          if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
        },
      );
      void reply.header('etag', `"${stored.sha256}"`);
      return stored;
    },
  );

  app.get<BlobRequest>(
    '/storage/blobs/:fileId',
    {
      exposeHeadRoute: false,
      schema: {
        operationId: 'downloadBlob',
        summary: 'Download an active file through its presigned URL (local backend); supports Range',
        tags: ['public'],
        security: [], // the URL's own signature is the credential
        params: idParams('fileId'),
        querystring: BlobQuerySchema,
        response: {
          200: {
            description:
              "The file's bytes (streamed; Content-Type is the file's, application/octet-stream when it has none)",
            content: { 'application/octet-stream': { schema: BlobBytesSchema } },
          },
          206: {
            description: 'The requested byte range (Content-Range names it)',
            content: { 'application/octet-stream': { schema: BlobBytesSchema } },
          },
          ...errorResponses(403, 404, 416, 422),
        },
      },
    },
    async (request, reply) => {
      let download;
      try {
        download = await transfers().download(request.params.fileId, request.query, {
          range: request.headers.range,
          ifRange: request.headers['if-range'] as string | undefined,
        });
      } catch (error) {
        if (error instanceof RangeNotSatisfiable) void reply.header('content-range', `bytes */${error.size}`);
        throw error;
      }
      // The bytes go straight to the socket through reused buffers (storage/blob-reader.ts);
      // the request is still logged when the response finishes. A download may take as long as it
      // needs but must not stall, as an upload (http/slow-clients.ts): a client that reads nothing
      // for the request timeout is cut off.
      reply.hijack();
      reply.raw.writeHead(download.status, { ...(reply.getHeaders() as OutgoingHttpHeaders), ...download.headers });
      try {
        await download.body.writeTo(reply.raw, app.ctx.config.requestTimeoutMs);
      } catch (error) {
        request.log.debug({ err: error }, 'download interrupted');
        reply.raw.destroy();
      }
    },
  );
}
