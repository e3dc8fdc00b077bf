import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sha256 } from './blob-server.js';

/** How the server misbehaves, as the edge does. */
export interface RangeServerMishaps {
  /** Each connection is cut after this many bytes of its body (0: never). */
  cutEvery: number;
  /** The body goes out `bytes` at a time, one piece every `everyMs` (null: at once). */
  trickle: { bytes: number; everyMs: number } | null;
  /** Range requests are answered 200 with the whole file (a server without range support). */
  ignoreRange: boolean;
  /** Range requests are answered 416. */
  refuseRange: boolean;
}

/**
 * A presigned-URL stand-in for one file, under the test's control: `GET /file?token=<t>` serves
 * `content` with `Range` (206, `Content-Range`) and a strong ETag (`If-Range` honoured), unless
 * the token is in `expired` (403, as an expired URL) or a mishap says otherwise. It counts every
 * byte of body it sends: what the client fetched in all.
 */
export interface RangeServer {
  url(token?: string): string;
  content: Buffer;
  etag: string;
  mishaps: RangeServerMishaps;
  expired: Set<string>;
  /** Each GET: its Range and If-Range headers and the status answered. */
  requests: { range: string | undefined; ifRange: string | undefined; status: number }[];
  bytesSent: number;
  /** Trickled answers still going out (the server counts their bytes until it sees them closed). */
  trickling: number;
  /** Serves other bytes from now on (another ETag). */
  replace(content: Buffer): void;
  close(): Promise<void>;
}

const NO_MISHAPS: RangeServerMishaps = { cutEvery: 0, trickle: null, ignoreRange: false, refuseRange: false };

export async function startRangeServer(content: Buffer): Promise<RangeServer> {
  const state: RangeServer = {
    url: () => '',
    content,
    etag: `"${sha256(content)}"`,
    mishaps: { ...NO_MISHAPS },
    expired: new Set(),
    requests: [],
    bytesSent: 0,
    trickling: 0,
    replace: (next) => {
      state.content = next;
      state.etag = `"${sha256(next)}"`;
    },
    close: () => Promise.resolve(),
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const range = req.headers.range;
    const ifRange = req.headers['if-range'] as string | undefined;
    const answer = (status: number) => state.requests.push({ range, ifRange, status });
    if (state.expired.has(url.searchParams.get('token') ?? '')) {
      answer(403);
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ statusCode: 403, code: 'forbidden', message: 'This URL has expired' }));
      return;
    }
    const body = state.content;
    const size = body.length;
    let start = 0;
    let status = 200;
    const match = /^bytes=(\d+)-$/.exec(range ?? '');
    const rangeApplies = match && !state.mishaps.ignoreRange && (ifRange === undefined || ifRange === state.etag);
    if (rangeApplies && state.mishaps.refuseRange) {
      answer(416);
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    if (rangeApplies) {
      start = Number(match[1]);
      if (start >= size) {
        answer(416);
        res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
        return;
      }
      status = 206;
    }
    answer(status);
    res.writeHead(status, {
      'content-length': String(size - start),
      'accept-ranges': 'bytes',
      etag: state.etag,
      ...(status === 206 ? { 'content-range': `bytes ${start}-${size - 1}/${size}` } : {}),
    });
    const { cutEvery, trickle } = state.mishaps;
    if (trickle) {
      let at = start;
      state.trickling++;
      res.on('close', () => state.trickling--);
      const timer = setInterval(() => {
        const piece = body.subarray(at, Math.min(size, at + trickle.bytes));
        at += piece.length;
        state.bytesSent += piece.length;
        if (at >= size) {
          clearInterval(timer);
          res.end(piece);
        } else res.write(piece);
      }, trickle.everyMs);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const end = cutEvery > 0 ? Math.min(size, start + cutEvery) : size;
    state.bytesSent += end - start;
    if (end < size) {
      res.write(body.subarray(start, end), () => res.socket?.destroy());
      return;
    }
    res.end(body.subarray(start, end));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = (token = 'fresh') => `http://127.0.0.1:${port}/file?token=${encodeURIComponent(token)}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
