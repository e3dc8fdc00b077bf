import http from 'node:http';
import net from 'node:net';

/** One request the proxy forwarded: `CONNECT 127.0.0.1:4000`, or `GET http://127.0.0.1:4000/v1/...`. */
export interface ForwardedRequest {
  method: string;
  target: string;
}

export interface ForwardProxy {
  /** `http://127.0.0.1:<port>`, without credentials. */
  url: string;
  /** The proxy URL with credentials, as HTTPS_PROXY would carry them. */
  urlWith(user: string, password: string): string;
  /** What it forwarded, in order (CONNECT tunnels and absolute-URI requests). */
  forwarded: ForwardedRequest[];
  /** Requests refused with 407 (no or wrong Proxy-Authorization). */
  refused: number;
  close(): Promise<void>;
}

const REALM = 'Basic realm="drover-test-proxy"';

/**
 * A real HTTP forward proxy on a loopback port, as a site's egress proxy: `CONNECT host:port`
 * opens a TCP tunnel (what a client does for an `https://` URL), a request with an absolute URI
 * (`GET http://host:port/path`) is forwarded (what a client does for an `http://` URL). With
 * `auth`, each request must carry `Proxy-Authorization: Basic` with that user and password, or it
 * gets 407 with `Proxy-Authenticate`. `hosts` are names it alone resolves. Everything it forwards is counted in `forwarded`.
 */
export async function startForwardProxy(
  options: {
    auth?: { user: string; password: string };
    /** Host names only the proxy resolves (name to IP address): a host the client cannot reach but through it. */
    hosts?: Record<string, string>;
  } = {},
): Promise<ForwardProxy> {
  const { auth } = options;
  const address = (host: string) => options.hosts?.[host] ?? host;
  const expected = auth ? `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}` : null;
  const authorized = (headers: http.IncomingHttpHeaders) =>
    expected === null || headers['proxy-authorization'] === expected;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const proxy: ForwardProxy = {
    url: '',
    urlWith: (user, password) =>
      proxy.url.replace('://', `://${encodeURIComponent(user)}:${encodeURIComponent(password)}@`),
    forwarded: [],
    refused: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };

  const server = http.createServer((req, res) => {
    if (!authorized(req.headers)) {
      proxy.refused++;
      res.writeHead(407, { 'proxy-authenticate': REALM, 'content-length': '0' }).end();
      return;
    }
    let target: URL;
    try {
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    proxy.forwarded.push({ method: req.method ?? 'GET', target: target.href });
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const upstream = http.request(
      {
        host: address(target.hostname),
        port: target.port || 80,
        path: `${target.pathname}${target.search}`,
        method: req.method,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) upstream.setHeader(name, value);
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });

  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    track(client);
    if (!authorized(req.headers)) {
      proxy.refused++;
      client.end(
        `HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: ${REALM}\r\nContent-Length: 0\r\n\r\n`,
      );
      return;
    }
    const [host, port] = [req.url!.slice(0, req.url!.lastIndexOf(':')), req.url!.slice(req.url!.lastIndexOf(':') + 1)];
    proxy.forwarded.push({ method: 'CONNECT', target: req.url! });
    let open = false;
    const upstream = net.connect(Number(port), address(host.replace(/^\[|\]$/g, '')), () => {
      open = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    track(upstream);
    upstream.on('error', () =>
      open ? client.destroy() : client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'),
    );
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.on('connection', track);

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return proxy;
}
