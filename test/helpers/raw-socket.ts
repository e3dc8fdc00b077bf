import net from 'node:net';

/** A TCP connection driven by hand: what a slow or hostile client sends, byte by byte. */
export interface RawConnection {
  socket: net.Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves when the server closed the connection (or it broke), with the time it happened. */
  closed: Promise<number>;
  /** The status code of the first answer, once one arrived. */
  status(): number | undefined;
}

/**
 * Connects to `url`'s host and port from `localAddress` (any 127.x.y.z on Linux: a distinct
 * client address on loopback) and writes `initial`, then leaves the connection as it is.
 */
export function openRaw(url: string, initial = '', localAddress?: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), ...(localAddress ? { localAddress } : {}) });
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    const closed = new Promise<number>((done) => socket.once('close', () => done(performance.now())));
    socket.on('error', () => undefined); // a reset is a close here
    socket.once('connect', () => {
      if (initial) socket.write(initial);
      resolve({
        socket,
        received: () => data,
        closed,
        status: () => {
          const match = /^HTTP\/1\.1 (\d{3})/.exec(data);
          return match ? Number(match[1]) : undefined;
        },
      });
    });
    socket.once('error', reject);
  });
}

/** The request line and headers of a POST announcing `length` bytes, and `sent` of them. */
export function halfSentPost(path: string, length = 1000, sent = 10, headers: Record<string, string> = {}): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'host: localhost',
    'content-type: application/json',
    `content-length: ${length}`,
  ];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n${'{'.padEnd(sent, ' ')}`;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** The responses in what a connection received, in order (bodies with a Content-Length only). */
export function parseResponses(received: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = received;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers = new Headers();
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    const length = Number(headers.get('content-length') ?? 0);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
    // Received as UTF-8 text: the error bodies here are ASCII, so characters are bytes.
    responses.push({ status, headers, text: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return responses;
}
