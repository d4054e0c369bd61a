/**
 * The logger Fastify gives each request: pino's child with the request id bound, made when the
 * request first logs rather than when it arrives. Most requests log nothing (a poll, a page), and
 * making a pino child (its bindings serialized) cost as much as a fifth of a poll's own work.
 */
import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type Level = FastifyBaseLogger['level'];
/** Any of pino's log call shapes, handed on as they came. */
type Call = (...args: unknown[]) => void;

class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  /** The service's logger itself, as a RequestLogger: its children are made lazily. */
  static over(logger: FastifyBaseLogger): RequestLogger {
    const root = new RequestLogger(logger, {}, {});
    root.made = logger;
    return root;
  }

  constructor(
    private readonly parent: FastifyBaseLogger | RequestLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    if (!this.made) {
      const parent = this.parent instanceof RequestLogger ? this.parent.logger : this.parent;
      this.made = parent.child(this.bindings, this.options);
    }
    return this.made;
  }

  get level(): Level {
    return this.made?.level ?? (this.options.level as Level | undefined) ?? this.parent.level;
  }

  set level(level: Level) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.logger.fatal as Call)(...args);
  }

  error(...args: unknown[]): void {
    (this.logger.error as Call)(...args);
  }

  warn(...args: unknown[]): void {
    (this.logger.warn as Call)(...args);
  }

  info(...args: unknown[]): void {
    (this.logger.info as Call)(...args);
  }

  debug(...args: unknown[]): void {
    (this.logger.debug as Call)(...args);
  }

  trace(...args: unknown[]): void {
    (this.logger.trace as Call)(...args);
  }

  silent(): void {}

  /** Made when it first logs, too: Fastify makes each request's logger as a child of its own. */
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return new RequestLogger(this, bindings, options ?? {}) as unknown as FastifyBaseLogger;
  }
}

/**
 * The logger Fastify is given: the service's logger as a RequestLogger, so that the logger Fastify
 * makes for each request (a `child` of this one) is one. Through `child` rather than Fastify's
 * `childLoggerFactory` option: Fastify checks each logger such a factory returns (seven method
 * look-ups and an array, at every request) and trusts its logger's own `child`.
 */
export function requestLoggers(logger: FastifyBaseLogger): FastifyBaseLogger {
  return RequestLogger.over(logger) as unknown as FastifyBaseLogger;
}
