import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FilesApi, InputFileDownload, NewOutputFile } from '../../src/files/files-api.js';
import { TransferError } from '../../src/files/transfer-error.js';

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/**
 * A stand-in for the presigned URLs: `GET /blob/<name>` serves `blobs[name]` (unless a scripted
 * answer says otherwise), `PUT /upload/<id>` stores the body in `uploads[id]`.
 */
export interface BlobServer {
  url: string;
  blobs: Map<string, Buffer>;
  uploads: Map<string, Buffer>;
  /** Status codes to answer next, one per request, before serving normally. */
  script: number[];
  /** Blobs served one byte every 20 ms (a trickling server). */
  trickle: Set<string>;
  requests: string[];
  /** Forgets every blob, upload, scripted answer and request (between tests). */
  reset(): void;
  close(): Promise<void>;
}

export async function startBlobServer(): Promise<BlobServer> {
  const blobs = new Map<string, Buffer>();
  const uploads = new Map<string, Buffer>();
  const script: number[] = [];
  const trickle = new Set<string>();
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const scripted = script.shift();
      if (scripted !== undefined) {
        res.writeHead(scripted, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ statusCode: scripted, code: 'x', message: `scripted ${scripted}` }));
        return;
      }
      const [, kind, name] = (req.url ?? '').split('/');
      if (req.method === 'GET' && kind === 'blob' && name && blobs.has(name)) {
        const body = blobs.get(name)!;
        res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
        if (trickle.has(name)) {
          let sent = 0;
          const timer = setInterval(() => {
            sent += 1;
            if (sent >= body.length) clearInterval(timer);
            res.write(body.subarray(sent - 1, sent), () => sent >= body.length && res.end());
          }, 20);
          res.on('close', () => clearInterval(timer));
          return;
        }
        res.end(body);
        return;
      }
      if (req.method === 'PUT' && kind === 'upload' && name) {
        uploads.set(name, Buffer.concat(chunks));
        res.writeHead(200).end();
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    blobs,
    uploads,
    script,
    trickle,
    requests,
    reset: () => {
      blobs.clear();
      uploads.clear();
      trickle.clear();
      script.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A FilesApi answering like the coordinator, over a BlobServer. */
export interface FakeApi extends FilesApi {
  created: NewOutputFile[];
  completed: string[];
  /** What `inputFile` answers (or throws) for a file id. */
  inputs: Map<string, InputFileDownload | TransferError>;
  /** Errors `createOutputFile` throws, one per call, before answering normally. */
  createErrors: TransferError[];
}

export function fakeApi(server: BlobServer): FakeApi {
  let next = 0;
  const api: FakeApi = {
    created: [],
    completed: [],
    inputs: new Map(),
    createErrors: [],
    async createOutputFile(_jobId, file) {
      const error = api.createErrors.shift();
      if (error) throw error;
      api.created.push(file);
      const fileId = `00000000-0000-4000-8000-${String(++next).padStart(12, '0')}`;
      return {
        fileId,
        uploadUrl: `${server.url}/upload/${fileId}`,
        method: 'PUT',
        headers: { 'content-type': file.contentType },
        expiresInSeconds: 900,
      };
    },
    async completeOutputFile(_jobId, fileId) {
      const body = server.uploads.get(fileId);
      const declared = api.created[api.created.length - 1]!;
      if (!body || body.length !== declared.size || sha256(body) !== declared.sha256) {
        throw new TransferError('final', 'completing the upload: HTTP 422: the upload does not match');
      }
      api.completed.push(fileId);
    },
    async inputFile(_jobId, fileId) {
      const answer = api.inputs.get(fileId);
      if (!answer) throw new TransferError('final', 'asking for a fresh download URL: HTTP 404: File not found');
      if (answer instanceof TransferError) throw answer;
      return answer;
    },
  };
  return api;
}
