import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../../errors.js';
import { AUTHORIZATION_SENT_TWICE, authorizationSentTwice, bearerToken } from '../auth/bearer.js';

/** What `/metrics` serves: the text of a scrape and its content type (metrics/prometheus-metrics.ts). */
export interface MetricsExposition {
  readonly contentType: string;
  render(): Promise<string>;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * `GET /metrics` on the API's address (docs/metrics.md): the Prometheus text, for the bearer token
 * `DROVER_METRICS_TOKEN` only (401 otherwise, compared in constant time). Registered only when
 * that token is set: without it the path is a 404 like any unknown route. Left out of the API
 * document: it is an operations endpoint, not part of the API.
 */
export function metricsRoutes(exposition: MetricsExposition, token: string) {
  const expected = digest(token);
  const authorize = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const given = bearerToken(request);
    if (given === null && authorizationSentTwice(request)) done(unauthorized(AUTHORIZATION_SENT_TWICE));
    else if (given === null) done(unauthorized('The metrics need the bearer token set in DROVER_METRICS_TOKEN'));
    else if (!timingSafeEqual(digest(given), expected)) done(unauthorized('Wrong metrics token'));
    else done();
  };
  return async function metrics(app: FastifyInstance): Promise<void> {
    app.get('/metrics', { onRequest: authorize, schema: { hide: true } }, async (_request, reply) => {
      void reply.type(exposition.contentType).header('cache-control', 'no-store');
      return exposition.render();
    });
  };
}
