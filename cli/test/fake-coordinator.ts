import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An answer of the fake coordinator: its status, JSON body and any more headers. */
export type FakeAnswer = [status: number, body: unknown, headers?: Record<string, string>];

/** A request as a route sees it: its headers and its JSON body (null: none). */
export interface FakeRequest {
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A route's answer: always the same, or one made at each call (a job or a batch that moves). */
export type FakeRoute = FakeAnswer | ((request: FakeRequest) => FakeAnswer);

export interface FakeCoordinator {
  url: string;
  /** The requests it got, as `METHOD /path?query`. */
  calls: string[];
  /** Their headers, in the same order. */
  headers: IncomingHttpHeaders[];
  /** Their JSON bodies (null: none), in the same order. */
  bodies: unknown[];
  close(): Promise<void>;
}

/**
 * A stand-in for a coordinator on a loopback port, answering each `METHOD /path` (query string
 * left out) with the JSON given for it (or made for each call), else 404: for tests of how the command line shows what a
 * coordinator answers, whatever that is.
 */
export async function fakeCoordinator(routes: Record<string, FakeRoute>): Promise<FakeCoordinator> {
  const calls: string[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const bodies: unknown[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const request: FakeRequest = { headers: req.headers, body: text === '' ? null : (JSON.parse(text) as unknown) };
      calls.push(`${req.method} ${req.url}`);
      headers.push(req.headers);
      bodies.push(request.body);
      const route = routes[`${req.method} ${req.url!.split('?')[0]}`];
      const [status, body, more] = (typeof route === 'function' ? route(request) : route) ?? [
        404,
        { statusCode: 404, code: 'not_found', message: 'Not found' },
      ];
      res.writeHead(status, { 'content-type': 'application/json', ...more }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    headers,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
