import type { KeyObject } from 'node:crypto';
import http from 'node:http';
import {
  generateEd25519KeyPair,
  privateKeyFromBase64,
  signRequest,
  type Labels,
  type WorkflowDefinition,
} from '@drover/shared';

/**
 * Simulated agents for the fleet benchmarks: each has its own Ed25519 key, enrolled through the
 * real `POST /v1/agent/enroll`, signs every request as docs/agent-protocol.md says, reports its
 * workflows and labels (`PUT /v1/agent/workflows`, `PUT /v1/agent/labels`) and holds a real
 * `GET /v1/agent/stream` (server-sent events over its own TCP connection, announcing its queue
 * capacity). Many of them live in one process. By themselves they do nothing with the jobs they
 * receive but tell `onJob` (`onDeploy` for update jobs); a `SimJobRunner` runs them as the
 * reference agent does, a `SimUpdateRunner` their update jobs.
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
  /** Told of each `deploy` event (an update job) as it arrives, when set. */
  onDeploy: ((deploy: DeployEvent) => void) | null = null;
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

  /** A signed request with a JSON body that must answer 200. */
  async report(origin: string, method: string, path: string, body: unknown, agent?: http.Agent): Promise<void> {
    const answer = await this.signedJson(origin, method, path, body, agent);
    if (answer.status !== 200) {
      throw new Error(`${method} ${path} of agent ${this.index}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    }
  }

  /** Reports the agent's workflows (`PUT /v1/agent/workflows`, the whole set). */
  reportWorkflows(origin: string, workflows: readonly WorkflowDefinition[], agent?: http.Agent): Promise<void> {
    return this.report(origin, 'PUT', '/v1/agent/workflows', { workflows }, agent);
  }

  /** Reports the agent's own labels (`PUT /v1/agent/labels`; `os` and `arch` are required). */
  reportLabels(origin: string, labels: Labels, agent?: http.Agent): Promise<void> {
    return this.report(origin, 'PUT', '/v1/agent/labels', { labels }, agent);
  }

  /**
   * Opens the event stream on its own connection, announcing `capacity` (the jobs its queue
   * holds; the coordinator's default, 4, when absent); resolves when the coordinator answered 200.
   * Shed past the coordinator's reconnect budget (503), it tries again after `Retry-After`, as the
   * agent does.
   */
  async connect(origin: string, capacity?: number): Promise<void> {
    for (;;) {
      const retryAfterS = await this.#open(origin, capacity);
      if (retryAfterS === null) return;
      await new Promise((resolve) => setTimeout(resolve, retryAfterS * 1000 * (0.5 + Math.random())));
    }
  }

  /** One attempt of `connect`: null once open, or the seconds a 503 asked to wait. */
  #open(origin: string, capacity?: number): Promise<number | null> {
    const path = `/v1/agent/stream${capacity === undefined ? '' : `?capacity=${capacity}`}`;
    const headers = {
      ...signRequest({ agentId: this.agentId, privateKey: this.privateKey, method: 'GET', path }),
      accept: 'text/event-stream',
    };
    return new Promise((resolve, reject) => {
      const req = http.request(`${origin}${path}`, { headers, agent: false });
      this.#request = req;
      req.on('response', (res) => {
        if (res.statusCode === 503) {
          res.resume();
          resolve(Number(res.headers['retry-after']) || 1);
          return;
        }
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
        resolve(null);
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
      const data = this.onDeploy && /^data: (.*)$/m.exec(block)?.[1];
      if (data) {
        const event = JSON.parse(data) as {
          jobId: string;
          applicationId: string;
          params: { release_id: string };
          startWithinMs?: number;
        };
        this.onDeploy!({
          jobId: event.jobId,
          applicationId: event.applicationId,
          releaseId: event.params.release_id,
          receivedAt: epochMs(),
          startWithinMs: event.startWithinMs ?? 0,
        });
      }
    } else if (name === 'ping') {
      this.pings += 1;
    } else if (name === 'job' && this.onJob) {
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data) this.onJob((JSON.parse(data) as { jobId: string }).jobId);
    }
  }
}

/**
 * The wall clock in ms (`Date.now()`): what the coordinator writes its times with, the same in
 * every thread and process (a thread's `performance.timeOrigin` drifts from it as NTP slews the clock).
 */
export const epochMs = () => Date.now();

/** A `deploy` event as it arrived: `receivedAt` on the wall clock (`epochMs`). */
export interface DeployEvent {
  jobId: string;
  applicationId: string;
  releaseId: string;
  receivedAt: number;
  /** The spread of the job's start the event names (0: none). */
  startWithinMs: number;
}

/** One job a `SimJobRunner` ran: performance.now() instants in this process. */
export interface SimJobRun {
  jobId: string;
  /** Its `job` event arrived. */
  receivedAt: number;
  /** Its run began (its accept answered, the agent's previous job ended). */
  startedAt: number;
  /** Its run ended (the simulated work done; `finish` goes out then). */
  endedAt: number;
}

/**
 * Runs the jobs an agent receives as the reference agent does (docs/agent-protocol.md, §6.5): each
 * `job` event is accepted at once (`accept`: it is in the agent's queue), the jobs run one at a time
 * in arrival order, each reported with `start`, then `runMs` of simulated work, then `finish`
 * (`success`). Reports go out one at a time, in order, like the agent's outbox; the next job begins
 * as soon as the previous one's work is done (its `finish` is on its way). The coordinator's
 * answers must be 200.
 */
export class SimJobRunner {
  readonly runs: SimJobRun[] = [];
  /** Set when a report was refused or failed; the runner then stops taking jobs. */
  error: Error | null = null;
  #queue: { jobId: string; receivedAt: number; accepted: Promise<void> }[] = [];
  /** Jobs received and not finished, oldest first (those a stopped runner holds too). */
  readonly #open = new Set<string>();
  #running: string | null = null;
  #stopped = false;
  #outbox: Promise<void> = Promise.resolve();

  constructor(
    readonly agent: SimAgent,
    private readonly origin: string,
    private readonly runMs: number,
    private readonly http: http.Agent,
  ) {
    agent.onJob = (jobId) => this.#received(jobId);
  }

  /** Jobs received and not yet begun. */
  get queued(): number {
    return this.#queue.length;
  }

  get busy(): boolean {
    return this.#running !== null;
  }

  /**
   * Begins no more jobs: the queued ones, and those that arrive from now on, are held as they are
   * (pending or queued on the coordinator, filling the agent's queue) until `finishOne`; the
   * running one ends as it would.
   */
  stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
  }

  /**
   * A stopped runner finishes the oldest job it holds (not the running one), freeing its place in
   * the agent's queue; resolves once the coordinator answered. False when it holds none.
   */
  async finishOne(): Promise<boolean> {
    const jobId = [...this.#open].find((id) => id !== this.#running);
    if (jobId === undefined) return false;
    this.#open.delete(jobId);
    await this.#send(jobId, 'finish', { status: 'success', exitCode: 0, errorMessage: null, output: {} });
    return true;
  }

  /** Resolves once every report sent so far was answered. */
  settled(): Promise<void> {
    return this.#outbox;
  }

  #received(jobId: string): void {
    if (this.#open.has(jobId) || this.runs.some((r) => r.jobId === jobId)) return;
    this.#open.add(jobId);
    if (this.#stopped) return;
    const receivedAt = performance.now();
    this.#queue.push({ jobId, receivedAt, accepted: this.#send(jobId, 'accept', {}) });
    if (this.#running === null) void this.#next();
  }

  /** The reports in order, one at a time; each resolves once answered. */
  #send(jobId: string, move: 'accept' | 'start' | 'finish', body: unknown): Promise<void> {
    const sent = this.#outbox.then(() =>
      this.agent.report(this.origin, 'POST', `/v1/agent/jobs/${jobId}/${move}`, body, this.http),
    );
    this.#outbox = sent.catch((error: unknown) => {
      this.error ??= error as Error;
      this.stop();
    });
    return sent;
  }

  async #next(): Promise<void> {
    const item = this.#queue.shift();
    if (!item || this.error || this.#stopped) return;
    this.#running = item.jobId;
    try {
      await item.accepted;
      const startedAt = performance.now();
      void this.#send(item.jobId, 'start', {}).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, this.runMs));
      const endedAt = performance.now();
      this.#open.delete(item.jobId);
      void this.#send(item.jobId, 'finish', { status: 'success', exitCode: 0, errorMessage: null, output: {} }).catch(
        () => {},
      );
      this.runs.push({ jobId: item.jobId, receivedAt: item.receivedAt, startedAt, endedAt });
    } catch {
      // The accept was refused: recorded in `error`.
    } finally {
      this.#running = null;
    }
    void this.#next();
  }
}

/** One update job a `SimUpdateRunner` ran: wall-clock instants (`epochMs`). */
export interface SimUpdate extends DeployEvent {
  outcome: 'success' | 'failed';
  /** Its `finish` was answered. */
  endedAt: number;
}

/**
 * Runs the update jobs (`deploy` events) an agent receives as the reference agent does
 * (docs/ota.md, "Update jobs"): `accept` at once (or at a random moment within the event's
 * `startWithinMs`, a large publish's spread), then one at a time `start`, `updateMs` of
 * simulated download and install, `finish` with the outcome `outcome(releaseId, agentId)` gives
 * (`failed`: exit code 1). While it gives null for a release, the agent holds that release's
 * jobs (accepted, not started) until `go()` is called after it changed. Reports go out one at a
 * time, in order, like the agent's outbox; the coordinator's answers must be 200.
 */
export class SimUpdateRunner {
  /** Every update job's event as it first arrived (held ones too). */
  readonly deploys: DeployEvent[] = [];
  /** The update jobs run to their end. */
  readonly updates: SimUpdate[] = [];
  /** Set when a report was refused or failed; the runner then takes no more jobs. */
  error: Error | null = null;
  readonly #seen = new Set<string>();
  #queue: DeployEvent[] = [];
  #held: DeployEvent[] = [];
  #running = false;
  #outbox: Promise<void> = Promise.resolve();

  constructor(
    readonly agent: SimAgent,
    private readonly origin: string,
    private readonly updateMs: number,
    private readonly http: http.Agent,
    private readonly outcome: (releaseId: string, agentId: string) => 'success' | 'failed' | null,
    /** Also asks for the signed manifest (`GET /v1/agent/deploy/desired`) right after the accept, as the reference agent does first. */
    private readonly manifests = false,
  ) {
    agent.onDeploy = (deploy) => this.#received(deploy);
  }

  /** The held jobs whose outcome is now known are run. */
  go(): void {
    const held = this.#held;
    this.#held = [];
    for (const deploy of held) this.#enqueue(deploy);
  }

  /** Resolves once every report sent so far was answered. */
  settled(): Promise<void> {
    return this.#outbox;
  }

  #received(deploy: DeployEvent): void {
    if (this.#seen.has(deploy.jobId) || this.error) return;
    this.#seen.add(deploy.jobId);
    this.deploys.push(deploy);
    const take = () => {
      if (this.error) return;
      void this.#send(deploy.jobId, 'accept', {}).catch(() => {});
      if (this.manifests) void this.#ask('GET', '/v1/agent/deploy/desired', undefined).catch(() => {});
      this.#enqueue(deploy);
    };
    if (deploy.startWithinMs > 0) setTimeout(take, Math.floor(Math.random() * deploy.startWithinMs));
    else take();
  }

  #enqueue(deploy: DeployEvent): void {
    if (this.outcome(deploy.releaseId, this.agent.agentId) === null) {
      this.#held.push(deploy);
      return;
    }
    this.#queue.push(deploy);
    if (!this.#running) void this.#next();
  }

  #send(jobId: string, move: 'accept' | 'start' | 'finish', body: unknown): Promise<void> {
    return this.#ask('POST', `/v1/agent/jobs/${jobId}/${move}`, body);
  }

  #ask(method: string, path: string, body: unknown): Promise<void> {
    const sent = this.#outbox.then(() => this.agent.report(this.origin, method, path, body, this.http));
    this.#outbox = sent.catch((error: unknown) => {
      this.error ??= error as Error;
    });
    return sent;
  }

  async #next(): Promise<void> {
    const deploy = this.#queue.shift();
    if (!deploy || this.error) return;
    this.#running = true;
    try {
      const outcome = this.outcome(deploy.releaseId, this.agent.agentId)!;
      void this.#send(deploy.jobId, 'start', {}).catch(() => {});
      if (this.updateMs > 0) await new Promise((resolve) => setTimeout(resolve, this.updateMs));
      await this.#send(
        deploy.jobId,
        'finish',
        outcome === 'success'
          ? { status: 'success', exitCode: 0, errorMessage: null, output: {} }
          : { status: 'failed', exitCode: 1, errorMessage: 'simulated: the update did not start', output: {} },
      );
      this.updates.push({ ...deploy, outcome, endedAt: epochMs() });
    } catch {
      // Recorded in `error`.
    } finally {
      this.#running = false;
    }
    void this.#next();
  }
}
