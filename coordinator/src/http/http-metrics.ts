import type { FastifyInstance } from 'fastify';
import type { MetricsExposition } from './routes/metrics.js';

/** The HTTP side of the metrics (metrics/prometheus-metrics.ts): answers observed, and the scrape's text. */
export interface HttpMetrics extends MetricsExposition {
  /** `route`: the matched route's pattern (`/v1/jobs/:id`), never the URL; null when none matched. */
  observeHttp(route: string | null, method: string, status: number, seconds: number): void;
}

/**
 * Observes every answer once it is sent (`drover_http_requests_total`,
 * `drover_http_request_duration_seconds`). A callback hook: no promise per request. An answer the
 * route writes itself (the agent stream, a blob download) is observed when it ends; a connection
 * cut before that is not.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: HttpMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeHttp(request.routeOptions.url ?? null, request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
