import type { KeyObject } from 'node:crypto';
import http from 'node:http';
import { generateEd25519KeyPair, privateKeyFromBase64, signRequest } from '@drover/shared';

/**
 * Simulated agents for the fleet benchmark: each has its own Ed25519 key, enrolled through the
 * real `POST /v1/agent/enroll`, signs every request as CONTRACT §5 says, and holds a real
 * `GET /v1/agent/stream` (server-sent events over its own TCP connection). Many of them live in
 * one process; they do nothing with the jobs they receive but record when the events arrived.
 */

export interface HttpAnswer {
  status: number;
  text: string;
}

/** One HTTP request with node:http (the answer read whole). */
export function request(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; agent?: http.Agent },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: options.method ?? 'GET',
      headers: {
        ...options.headers,
        ...(options.body === undefined
          ? {}
          : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(options.body)) }),
      },
      ...(options.agent ? { agent: options.agent } : {}),
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A JSON call that must answer `expected`; returns the parsed body. */
export async function jsonCall<T = any>(
  url: string,
  options: { method?: string; token?: string; body?: unknown; agent?: http.Agent; expected?: number },
): Promise<T> {
  const answer = await request(url, {
    ...(options.method ? { method: options.method } : {}),
    headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.agent ? { agent: options.agent } : {}),
  });
  if (answer.status !== (options.expected ?? 200)) {
    throw new Error(`${options.method ?? 'GET'} ${url}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
  }
  return (answer.text ? JSON.parse(answer.text) : undefined) as T;
}

/** Runs `fn` over `items` with at most `limit` at a time; resolves with the results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>) {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!, i);
      }
    }),
  );
  return results;
}

export class SimAgent {
  /** performance.now() when the first `deploy` event arrived since the last `resetDeploys`. */
  firstDeployAt: number | null = null;
  deployEvents = 0;
  pings = 0;
  /** Told of each `job` event as it arrives (its job id), when set. */
  onJob: ((jobId: string) => void) | null = null;
  #request: http.ClientRequest | null = null;

  constructor(
    readonly agentId: string,
    private readonly privateKey: KeyObject,
    readonly index: number,
    /** The coordinator's key, received at enrollment (the manifests' signer). */
    readonly serverPublicKey: string,
  ) {}

  /** Makes a key pair and enrolls it with a fresh enrollment token. */
  static async enroll(origin: string, token: string, index: number): Promise<SimAgent> {
    const keys = generateEd25519KeyPair();
    const body = await jsonCall<{ agentId: string; serverPublicKey: string }>(`${origin}/v1/agent/enroll`, {
      method: 'POST',
      body: {
        enrollmentToken: token,
        publicKey: keys.publicKey,
        hostname: `sim-${index}.fleet.local`,
        os: 'linux 6.8.0 x64',
        agentVersion: '0.1.0',
      },
      expected: 201,
    });
    return new SimAgent(body.agentId, privateKeyFromBase64(keys.privateKey), index, body.serverPublicKey);
  }

  /** A signed GET (fresh timestamp and nonce). */
  signedGet(origin: string, path: string, agent?: http.Agent): Promise<HttpAnswer> {
    const headers = signRequest({ agentId: this.agentId, privateKey: this.privateKey, method: 'GET', path });
    return request(`${origin}${path}`, { headers, ...(agent ? { agent } : {}) });
  }

  /** A signed request with a JSON body (fresh timestamp and nonce). */
  signedJson(origin: string, method: string, path: string, body: unknown, agent?: http.Agent): Promise<HttpAnswer> {
    const text = JSON.stringify(body);
    const headers = signRequest({ agentId: this.agentId, privateKey: this.privateKey, method, path, body: text });
    return request(`${origin}${path}`, { method, headers, body: text, ...(agent ? { agent } : {}) });
  }

  /** Opens the event stream on its own connection; resolves when the coordinator answered 200. */
  connect(origin: string): Promise<void> {
    const path = '/v1/agent/stream';
    const headers = {
      ...signRequest({ agentId: this.agentId, privateKey: this.privateKey, method: 'GET', path }),
      accept: 'text/event-stream',
    };
    return new Promise((resolve, reject) => {
      const req = http.request(`${origin}${path}`, { headers, agent: false });
      this.#request = req;
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream of agent ${this.index}: HTTP ${res.statusCode}`));
          res.resume();
          return;
        }
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            this.#onEvent(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        });
        res.on('error', () => {});
        resolve();
      });
      req.on('error', reject);
      req.end();
    });
  }

  resetDeploys(): void {
    this.firstDeployAt = null;
    this.deployEvents = 0;
  }

  close(): void {
    this.#request?.destroy();
    this.#request = null;
  }

  #onEvent(block: string): void {
    const name = /^event: (.*)$/m.exec(block)?.[1];
    if (name === 'deploy') {
      this.deployEvents += 1;
      this.firstDeployAt ??= performance.now();
    } else if (name === 'ping') {
      this.pings += 1;
    } else if (name === 'job' && this.onJob) {
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data) this.onJob((JSON.parse(data) as { jobId: string }).jobId);
    }
  }
}
