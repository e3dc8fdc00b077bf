import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type pino from 'pino';
import type { Logger } from 'pino';

/**
 * One log line per request, at completion, without the query string (presigned URLs carry
 * signatures there) and without headers (credentials). It is written through the root logger
 * with the request id, so a request that logs nothing else never builds a child logger.
 */
export class RequestLogController extends LogController {
  constructor(private readonly root: Logger) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const level = error ? 'error' : 'info';
    if (!this.root.isLevelEnabled(level)) return;
    const line = {
      reqId: request.id,
      method: request.method,
      path: request.url.split('?')[0],
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) this.root.error({ ...line, err: error }, 'request errored');
    else this.root.info(line, 'request completed');
  }
}

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace']);
const noop = () => {};

/**
 * `request.log` built on first use: a pino child (with its bindings and redaction) costs a few
 * microseconds, and most requests never log through it (docs/performance.md). Calls at a level
 * the logger has disabled never build it at all.
 */
export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = function (
  logger,
  bindings,
  options,
) {
  let child: Logger | undefined;
  const materialize = () => (child ??= (logger as Logger).child(bindings, options));
  return new Proxy(logger as Logger, {
    get(target, property) {
      if (!child && typeof property === 'string') {
        if (LEVELS.has(property)) {
          // Fastify checks `typeof log.info === 'function'` on every request: answer without building.
          if (!target.isLevelEnabled(property)) return noop;
          return (...args: unknown[]) => (materialize()[property as pino.Level] as (...a: unknown[]) => void)(...args);
        }
        if (property === 'child') return (...args: Parameters<Logger['child']>) => materialize().child(...args);
      }
      const real = materialize();
      const value: unknown = Reflect.get(real, property, real);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(real) : value;
    },
  });
};
