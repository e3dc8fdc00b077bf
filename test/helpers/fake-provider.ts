import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a fake provider received, its body parsed (JSON or form) when it had one. */
export interface ReceivedRequest {
  method: string;
  path: string;
  /** The query string's parameters. */
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: any;
  raw: string;
}

export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** An HTML page, sent as is instead of `body`. */
  html?: string;
}

export type FakeHandler = (request: ReceivedRequest) => FakeAnswer | Promise<FakeAnswer>;

/**
 * A small HTTP server standing in for a chat provider's API in tests (Slack's and Discord's
 * fakes build on it): routes by `METHOD /path` (path parameters as `:name`), records every
 * request, and can be told to answer the next calls of a route otherwise (a 429, an outage).
 */
export class FakeProviderServer {
  readonly requests: ReceivedRequest[] = [];
  private readonly routes: { method: string; pattern: RegExp; handler: FakeHandler }[] = [];
  private readonly overrides: { method: string; pattern: RegExp; answer: FakeAnswer; times: number }[] = [];
  private readonly holds: { method: string; pattern: RegExp; arrived: () => void; released: Promise<void> }[] = [];
  protected server: http.Server | null = null;
  url = '';

  route(method: string, path: string, handler: FakeHandler): void {
    this.routes.push({ method, pattern: toPattern(path), handler });
  }

  /** The next `times` calls of `METHOD path` get `answer` instead of the route's own. */
  failNext(method: string, path: string, answer: FakeAnswer, times = 1): void {
    this.overrides.push({ method, pattern: toPattern(path), answer, times });
  }

  /**
   * The next call of `METHOD path` waits, once received, until `release` is called (then answers
   * as it would have): `arrived` resolves when it came, so a test can act while the coordinator
   * waits on the provider.
   */
  holdNext(method: string, path: string): { arrived: Promise<void>; release(): void } {
    let arrived!: () => void;
    let release!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ method, pattern: toPattern(path), arrived, released });
    return { arrived: arrival, release };
  }

  /**
   * The provider's consent page at `GET path`, as Slack's and Discord's are: a page of their own
   * site where the person chooses. "Allow" goes back to the `redirect_uri` with `allowed` (the
   * good code...) and the `state`; "Cancel" with `error=access_denied` and the state. Either is a
   * navigation started by this page, from this site: the coordinator's SameSite=Strict cookies
   * are not sent with it when the fake is reached as another site (`localhost` for `127.0.0.1`).
   */
  consentPage(path: string, allowed: Record<string, string>): void {
    this.route('GET', path, ({ query }) => {
      const back = (answer: Record<string, string>) => {
        const url = new URL(query.redirect_uri ?? '');
        for (const [k, v] of Object.entries({ ...answer, state: query.state ?? '' })) url.searchParams.set(k, v);
        return url.toString().replaceAll('&', '&amp;').replaceAll('"', '&quot;');
      };
      const denied = { error: 'access_denied', error_description: 'The resource owner denied the request' };
      return {
        html: [
          '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Allow the app?</title></head>',
          '<body><main><h1>Allow the app to join your workspace?</h1>',
          `<p><a href="${back(allowed)}">Allow</a> <a href="${back(denied)}">Cancel</a></p>`,
          '</main></body></html>',
        ].join(''),
      };
    });
  }

  /** Forgets the answers `failNext` still had to give. */
  clearFailures(): void {
    this.overrides.length = 0;
  }

  /** The requests received on `METHOD path` (path parameters as `:name`). */
  received(method: string, path: string): ReceivedRequest[] {
    const pattern = toPattern(path);
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  /** Listens on a free loopback port, or on `port` (a restart after `close`: the provider back from an outage). */
  async start(port = 0): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    const server = this.server;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The port it listens on (to start again on it). */
  get port(): number {
    return Number(new URL(this.url).port);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const request: ReceivedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: parseBody(raw, req.headers['content-type']),
      raw,
    };
    this.requests.push(request);
    const hold = this.holds.find((h) => h.method === request.method && h.pattern.test(request.path));
    if (hold) {
      this.holds.splice(this.holds.indexOf(hold), 1);
      hold.arrived();
      await hold.released;
    }
    let answer: FakeAnswer;
    const override = this.overrides.find((o) => o.method === request.method && o.pattern.test(request.path));
    if (override) {
      if (--override.times <= 0) this.overrides.splice(this.overrides.indexOf(override), 1);
      answer = override.answer;
    } else {
      const route = this.routes.find((r) => r.method === request.method && r.pattern.test(request.path));
      answer = route ? await route.handler(request) : { status: 404, body: { message: `no fake for ${request.path}` } };
    }
    const body = answer.html ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
    res.writeHead(answer.status ?? 200, {
      ...(answer.html !== undefined
        ? { 'content-type': 'text/html; charset=utf-8' }
        : body
          ? { 'content-type': 'application/json' }
          : {}),
      ...answer.headers,
    });
    res.end(body);
  }
}

function toPattern(path: string): RegExp {
  return new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[a-zA-Z]+/g, '[^/]+')}$`);
}

function parseBody(raw: string, contentType: string | undefined): any {
  if (!raw) return null;
  if (contentType?.includes('application/json')) return JSON.parse(raw);
  if (contentType?.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(raw));
  return raw;
}
