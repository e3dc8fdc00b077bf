import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsLogger } from './prometheus-metrics.js';

export interface MetricsServer {
  /** `http://<host>:<port>` as bound (the real port when 0 was asked). */
  readonly url: string;
  close(): Promise<void>;
}

interface Exposition {
  readonly contentType: string;
  render(): Promise<string>;
}

const errorBody = (statusCode: number, code: string, message: string) => JSON.stringify({ statusCode, code, message });

/**
 * `--metrics-listen` (docs/metrics.md): `GET /metrics` without credentials on an address of its
 * own, for a scraper on a private network or the same host. Nothing else is served there: any
 * other path is 404 and any other method on `/metrics` 405, in the API's error body.
 */
export async function startMetricsServer(
  exposition: Exposition,
  address: { host: string; port: number },
  logger: MetricsLogger,
): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    const json = 'application/json; charset=utf-8';
    if (path !== '/metrics') {
      send(
        404,
        json,
        errorBody(404, 'not_found', `Route ${request.method} ${path} not found; this address serves GET /metrics`),
      );
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      send(
        405,
        json,
        errorBody(405, 'method_not_allowed', `${request.method} is not allowed on /metrics; it answers to GET, HEAD`),
        {
          allow: 'GET, HEAD',
        },
      );
      return;
    }
    exposition.render().then(
      (text) => send(200, exposition.contentType, text),
      (error: unknown) => {
        logger.error({ err: error }, 'could not render the metrics');
        send(500, json, errorBody(500, 'internal', 'Internal server error'));
      },
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
