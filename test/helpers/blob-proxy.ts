import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does to the next download (GET) it forwards. */
export type DownloadMishap =
  /** Forward this many bytes of the body, then drop the connection. */
  | { cutAfter: number }
  /** Forward this many bytes of the body, then send nothing more (the client must give up or be killed). */
  | { stallAfter: number };

/**
 * An HTTP proxy in front of the coordinator for its presigned URLs (the coordinator's public URL
 * points here): it records the `Range` header of every GET, and can break the next download in
 * the middle, as a flaky network does.
 */
export interface BlobProxy {
  url: string;
  /** Sends requests to the coordinator at this URL (known only once it listens). */
  target(url: string): void;
  /** The `Range` header of each GET forwarded so far (undefined: none). */
  ranges: (string | undefined)[];
  /** Breaks the next download this way. */
  breakNext(mishap: DownloadMishap): void;
  close(): Promise<void>;
}

export async function startBlobProxy(): Promise<BlobProxy> {
  let target: URL | undefined;
  let next: DownloadMishap | undefined;
  const ranges: (string | undefined)[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    if (!target) {
      res.writeHead(503).end();
      return;
    }
    const mishap = req.method === 'GET' ? next : undefined;
    if (req.method === 'GET') {
      ranges.push(req.headers.range);
      next = undefined;
    }
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!mishap) {
          answer.pipe(res);
          return;
        }
        const limit = 'cutAfter' in mishap ? mishap.cutAfter : mishap.stallAfter;
        let sent = 0;
        answer.on('data', (chunk: Buffer) => {
          const room = limit - sent;
          if (room <= 0) return;
          const part = room < chunk.length ? chunk.subarray(0, room) : chunk;
          sent += part.length;
          if (sent >= limit) {
            answer.destroy(); // nothing more from the coordinator
            // A cut drops the connection once the bytes before it are out; a stall keeps it open.
            res.write(part, () => {
              if ('cutAfter' in mishap) res.socket?.destroy();
            });
            return;
          }
          if (!res.write(part)) {
            answer.pause();
            res.once('drain', () => answer.resume());
          }
        });
        answer.on('end', () => res.end());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
    res.on('close', () => upstream.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    target: (url) => {
      target = new URL(url);
    },
    ranges,
    breakNext: (mishap) => {
      next = mishap;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
