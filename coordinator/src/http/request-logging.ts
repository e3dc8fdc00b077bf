import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type pino from 'pino';
import type { Logger } from 'pino';

/** Asked for by machines, often: their successful requests are logged at debug. */
const ROUTINE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/metrics']);

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
    const path = request.url.split('?')[0]!;
    // A health check or a scrape that went well, every few seconds from a balancer or Prometheus,
    // would be most of the log: it is a debug line.
    const routine = !error && reply.statusCode < 400 && ROUTINE_PATHS.has(path);
    const level = error ? 'error' : routine ? 'debug' : 'info';
    if (!this.root.isLevelEnabled(level)) return;
    const line = {
      reqId: request.id,
      method: request.method,
      path,
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) this.root.error({ ...line, err: error }, 'request errored');
    else this.root[level](line, 'request completed');
  }
}

/**
 * `request.log` built on first use: a pino child (with its bindings and redaction) costs a few
 * microseconds, and most requests never log through it (docs/performance.md). Calls at a level
 * the logger has disabled never build it at all. A plain class (not a Proxy): Fastify reads its
 * seven methods on every request to validate it, and prototype methods make that read cheap.
 */
class LazyRequestLogger {
  #child: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly childBindings: pino.Bindings,
    private readonly childOptions: pino.ChildLoggerOptions,
  ) {}

  private real(): Logger {
    return (this.#child ??= this.parent.child(this.childBindings, this.childOptions));
  }

  private write(level: pino.Level, args: unknown[]): void {
    if (!(this.#child ?? this.parent).isLevelEnabled(level)) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.#child ?? this.parent).level;
  }
  set level(level: string) {
    this.real().level = level;
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.real().child(bindings, options);
  }
  bindings(): pino.Bindings {
    return this.real().bindings();
  }
  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.parent).isLevelEnabled(level);
  }
}

export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = function (
  logger,
  bindings,
  options,
) {
  return new LazyRequestLogger(logger as Logger, bindings, options) as unknown as Logger;
};
