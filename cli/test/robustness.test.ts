import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobStatus } from '@drover/shared';
import { ApiError, Interrupted, NoAnswer } from '../src/errors.js';
import { EXIT, exitCodeOfStatus } from '../src/exit-codes.js';
import { Api, MAX_ANSWER_BYTES } from '../src/http/api.js';
import { isTemporary, readThroughOutage } from '../src/http/outage.js';
import { describeUnexpected, runCli } from '../src/program.js';
import { stopOnBrokenPipe } from '../src/runtime.js';
import { readStdinLine } from '../src/session/prompt.js';
import { testRuntime } from './test-runtime.js';
import { writeSignedIn } from './signed-in.js';

/** How the command line copes with what a coordinator (or something else) answers, or does not. */

const TRIGGER = '8c2f1a3b-4d5e-4f60-9a7b-8c9d0e1f2a3b';
const JOB = '019ac3e2-6b20-7d11-8e0f-1a2b3c4d5e6f';
const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A loopback server answering each `METHOD /path` with its handler (any body, any type), else a JSON 404. */
async function server(routes: Record<string, Handler>) {
  const calls: string[] = [];
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls.push(`${req.method} ${req.url}`);
      const route = routes[`${req.method} ${req.url!.split('?')[0]}`];
      if (route) return route(req, res);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not found"}');
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
  (_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/** Answers with each handler in turn, the last one from then on. */
const inTurn = (...handlers: Handler[]): Handler => {
  let n = 0;
  return (req, res) => handlers[Math.min(n++, handlers.length - 1)]!(req, res);
};

const job = (status: string, more: Record<string, unknown> = {}) => ({
  id: JOB,
  number: 12,
  orgId: ORG,
  status,
  workflowName: 'hello',
  source: 'webhook',
  triggerId: TRIGGER,
  agentId: null,
  ref: null,
  params: {},
  output: {},
  exitCode: status === 'success' ? 0 : null,
  errorMessage: null,
  createdAt: '2026-11-28T09:30:00.000Z',
  startedAt: null,
  finishedAt: null,
  logs: [],
  logsMore: false,
  ...more,
});
const accepted = { jobId: JOB, status: 'pending', statusUrl: `/api/jobs/${JOB}` };

let srv: Awaited<ReturnType<typeof server>> | undefined;
let configHome: string | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
  if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
  configHome = undefined;
});

/** Starts the server; `session` signs in to it (an async job is followed with a session). */
async function start(routes: Record<string, Handler>, who: { token?: boolean; session?: boolean } = { token: true }) {
  srv = await server(routes);
  configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-robust-'));
  if (who.session) {
    writeSignedIn(configHome, srv.url);
  }
  return {
    XDG_CONFIG_HOME: configHome,
    DROVER_ORG: ORG,
    ...(who.session ? {} : { DROVER_URL: srv.url }),
    ...(who.token ? { DROVER_TOKEN: 'drv_x' } : {}),
  };
}

async function cli(args: string[], env: Record<string, string>, signal?: AbortSignal) {
  const rt = testRuntime({ env, ...(signal ? { signal } : {}) });
  const code = await runCli(args, rt);
  return { code, stdout: rt.stdout(), stderr: rt.stderr() };
}

describe('a run answer without a job status this drover knows', () => {
  it('maps no status, or one it does not know, to exit 2, never 0', () => {
    expect(exitCodeOfStatus('skipped' as JobStatus)).toBe(EXIT.usage);
    expect(exitCodeOfStatus(undefined as unknown as JobStatus)).toBe(EXIT.usage);
  });

  it('refuses a 200 {} rather than reporting `Job undefined` with exit 0', async () => {
    const env = await start({ [`POST /v1/triggers/${TRIGGER}/run`]: json(200, {}) });
    const res = await cli(['run', TRIGGER, '--wait'], env);
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr: "drover: the coordinator's answer to the run names no job: check --url\n",
    });
  });

  it('says a status it does not know comes from a newer coordinator (sync and async answers)', async () => {
    const env = await start({
      [`POST /v1/triggers/${TRIGGER}/run`]: inTurn(
        json(200, { ...accepted, status: 'skipped', output: {} }),
        json(202, { ...accepted, status: 'skipped' }),
      ),
    });
    for (const args of [
      ['run', TRIGGER, '--wait'],
      ['run', TRIGGER],
    ]) {
      const res = await cli(args, env);
      expect(res.code).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(
        new RegExp(
          `^drover: the coordinator reported status "skipped" for job ${JOB}, which this drover .* does not know: upgrade the CLI\\n$`,
        ),
      );
    }
  });

  it('ends a wait on a job whose status it does not know, with exit 2', async () => {
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: json(200, job('skipped')),
      },
      { session: true },
    );
    const res = await cli(['run', TRIGGER, '--wait'], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('reported status "skipped"');
  });
});

describe('a 2xx answer that is not JSON', () => {
  const html: Handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hi</html>');

  it('is refused naming the URL and the content type, not printed nor crashed on', async () => {
    const env = await start({ 'GET /v1/agents': html });
    const res = await cli(['agents', '--json'], env);
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr: `drover: the coordinator at ${srv!.url} answered GET /v1/agents with HTTP 200 text/html, not Drover's API: check --url\n`,
    });
    const table = await cli(['agents'], env);
    expect(table.code).toBe(2);
    expect(table.stderr).not.toContain('TypeError');
  });

  it('is refused when it says JSON but does not parse, or says no type', async () => {
    srv = await server({
      'GET /v1/a': (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('<html>'),
      'GET /v1/b': (_req, res) => {
        res.removeHeader('content-type');
        res.writeHead(200).end('{}');
      },
      'DELETE /v1/c': (_req, res) => res.writeHead(204).end(),
      'GET /v1/d': (_req, res) => res.writeHead(200, { 'content-type': 'application/problem+json' }).end('{"a":1}'),
    });
    const api = new Api(srv.url, null);
    await expect(api.get('/a')).rejects.toThrow(
      /answered GET \/v1\/a with HTTP 200 application\/json that does not parse as JSON, not Drover's API/,
    );
    await expect(api.get('/b')).rejects.toThrow(/HTTP 200 without a content type, not Drover's API: check --url/);
    // No body at all (204) is an answer, and any JSON type is JSON.
    await expect(api.delete('/c')).resolves.toBeNull();
    await expect(api.get('/d')).resolves.toEqual({ a: 1 });
  });

  it('shows an unexpected error in one line, its stack only with DROVER_DEBUG', () => {
    const error = new TypeError("Cannot read properties of undefined (reading 'map')");
    expect(describeUnexpected(error, undefined)).toBe(
      "unexpected error: TypeError: Cannot read properties of undefined (reading 'map') (set DROVER_DEBUG=1 for the details)",
    );
    expect(describeUnexpected(error, '0')).not.toContain('\n');
    expect(describeUnexpected(error, '1')).toContain('\n    at ');
  });
});

describe('an answer larger than drover reads', () => {
  it('is given up past MAX_ANSWER_BYTES, as the bytes come or as announced, not held in memory', async () => {
    let sent = 0;
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    srv = await server({
      // A JSON string of spaces, 64 MiB past the limit, without a Content-Length (it could go on forever).
      'GET /v1/agents': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('"');
        const more = () => {
          while (!res.destroyed && sent < MAX_ANSWER_BYTES + 64 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return;
          }
          if (!res.destroyed) res.end('"');
        };
        res.on('drain', more);
        res.on('close', () => res.off('drain', more));
        more();
      },
      'GET /v1/workflows': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MAX_ANSWER_BYTES + 1) });
        res.write('"');
      },
    });
    const api = new Api(srv.url, null);
    await expect(api.get('/agents')).rejects.toThrow(
      `the coordinator at ${srv.url} answered GET /v1/agents with more than 128 MiB, the most drover reads of an answer: not Drover's API; check --url`,
    );
    // Stopped at the limit (what the sockets' buffers held on top of it aside).
    expect(sent).toBeGreaterThan(MAX_ANSWER_BYTES);
    expect(sent).toBeLessThan(MAX_ANSWER_BYTES + 32 * 1024 * 1024);
    await expect(api.get('/workflows')).rejects.toThrow(
      `the coordinator at ${srv.url} answered GET /v1/workflows with more than 128 MiB`,
    );
  }, 60_000);
});

describe('an outage of the coordinator during a wait', () => {
  it('counts no answer and 502/503/504 as temporary, any other refusal as the end', () => {
    expect(isTemporary(new NoAnswer('x', 'ECONNREFUSED'))).toBe(true);
    expect(isTemporary(new NoAnswer('x', 'ECONNRESET'))).toBe(true);
    expect(isTemporary(new NoAnswer('x', 'UND_ERR_HEADERS_TIMEOUT'))).toBe(true);
    expect(isTemporary(new NoAnswer('x', 'ENOTFOUND'))).toBe(false);
    for (const status of [502, 503, 504]) expect(isTemporary(new ApiError(status, null, 'x', null))).toBe(true);
    for (const status of [400, 401, 404, 409, 429, 500])
      expect(isTemporary(new ApiError(status, null, 'x', null))).toBe(false);
  });

  it('looks again after 1 s, says it once, and gives up at the deadline', async () => {
    const told: string[] = [];
    let reads = 0;
    const began = Date.now();
    const end = await readThroughOutage(
      async () => {
        reads++;
        throw new NoAnswer('cannot reach the coordinator at x: ECONNREFUSED', 'ECONNREFUSED');
      },
      { signal: new AbortController().signal, deadline: Date.now() + 1_500, onOutage: (m) => told.push(m) },
    );
    expect('gaveUp' in end).toBe(true);
    expect(Date.now() - began).toBeGreaterThanOrEqual(1_400);
    expect(reads).toBe(3); // at once, after 1 s, at the deadline (a pause of 0.5 s, the rest)
    expect(told).toEqual(['the coordinator did not answer (ECONNREFUSED); still waiting']);
    await expect(
      readThroughOutage(
        async () => {
          throw new ApiError(404, 'not_found', 'Job not found', null);
        },
        { signal: new AbortController().signal, deadline: Infinity },
      ),
    ).rejects.toThrow('Job not found');
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    await expect(
      readThroughOutage(
        async () => {
          throw new ApiError(503, null, 'down', null, 30);
        },
        { signal: stop.signal, deadline: Infinity },
      ),
    ).rejects.toBeInstanceOf(Interrupted);
  });

  it('waits out a dropped connection and a 503 during run --wait, then exits with the outcome', async () => {
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: inTurn(
          json(200, job('running')),
          (req) => req.socket.destroy(),
          json(503, { message: 'restarting' }, { 'retry-after': '1' }),
          json(200, job('success')),
        ),
      },
      { session: true },
    );
    const res = await cli(['run', TRIGGER, '--wait'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe(
      'drover: the coordinator did not answer (UND_ERR_SOCKET); still waiting\ndrover: the coordinator answers again\n',
    );
    expect(res.stdout).toContain(`Job ${JOB} succeeded`);
  }, 15_000);

  it('exits 6 at the deadline of --wait-timeout, and 2 on a 4xx', async () => {
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: inTurn(json(200, job('running')), json(503, { message: 'restarting' })),
      },
      { session: true },
    );
    const res = await cli(['run', TRIGGER, '--wait', '--wait-timeout', '2s'], env);
    expect(res.code).toBe(6);
    expect(res.stdout).toContain(`Job ${JOB} is still running: the wait timed out`);
    expect(res.stderr).toBe('drover: the coordinator did not answer (HTTP 503); still waiting\n');

    await srv!.close();
    const gone = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: inTurn(json(200, job('running')), json(404, { message: 'Job not found' })),
      },
      { session: true },
    );
    expect(await cli(['run', TRIGGER, '--wait'], gone)).toMatchObject({ code: 2, stderr: 'drover: Job not found\n' });
  }, 15_000);
});

describe('an interrupted wait with --json', () => {
  it('prints the job as it is and exits 6 (run --wait and job --follow)', async () => {
    let stop = new AbortController();
    let looks = 0;
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: (_req, res) => {
          // Interrupted as it looks again: the wait has seen the job (however slow the machine).
          looks += 1;
          if (looks === 2) stop.abort('SIGINT');
          json(200, job('running'))(_req, res);
        },
      },
      { session: true },
    );
    const run = await cli(['run', TRIGGER, '--wait', '--json'], env, stop.signal);
    expect(run.code, run.stderr).toBe(6);
    expect(JSON.parse(run.stdout)).toMatchObject({ id: JOB, status: 'running' });
    stop = new AbortController();
    looks = 0;
    const follow = await cli(['job', JOB, '--follow', '--json'], env, stop.signal);
    expect(follow.code, follow.stderr).toBe(6);
    expect(JSON.parse(follow.stdout)).toMatchObject({ id: JOB, status: 'running' });
  });
});

describe('a wait interrupted or timed out before it saw the job (an outage from the start)', () => {
  const BATCH = '019ac3e2-6b20-7d11-8e0f-00000000ba7c';
  const batchAccepted = {
    batchId: BATCH,
    jobIds: [JOB],
    jobCount: 1,
    status: 'pending',
    statusUrl: `/api/batches/${BATCH}`,
  };

  it("prints the run's answer and exits 6, as for any wait that ends while the job runs", async () => {
    let stop = new AbortController();
    const down = json(503, { message: 'restarting' });
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`POST /v1/orgs/${ORG}/triggers/fleet/run`]: json(202, batchAccepted),
        // Interrupted as the first look is refused: the job (the batch) was never seen.
        [`GET /v1/jobs/${JOB}`]: (req, res) => {
          stop.abort('SIGINT');
          down(req, res);
        },
        [`GET /v1/batches/${BATCH}`]: (req, res) => {
          stop.abort('SIGINT');
          down(req, res);
        },
      },
      { session: true },
    );
    // (The interruption may come while the first look still waits for its answer: no outage said yet.)
    const run = await cli(['run', TRIGGER, '--wait', '--json'], env, stop.signal);
    expect(run.code, run.stderr).toBe(6);
    expect(JSON.parse(run.stdout)).toEqual(accepted);

    stop = new AbortController();
    const said = await cli(['run', TRIGGER, '--wait'], env, stop.signal);
    expect(said.code, said.stderr).toBe(6);
    expect(said.stdout).toContain(`Job ${JOB} is still pending: the wait was interrupted\n`);

    stop = new AbortController();
    const batch = await cli(['run', 'fleet', '--wait', '--json'], env, stop.signal);
    expect(batch.code, batch.stderr).toBe(6);
    expect(JSON.parse(batch.stdout)).toEqual(batchAccepted);
  });

  it('prints it too when --wait-timeout passes first, with the error that says the job may still run', async () => {
    const env = await start(
      {
        [`POST /v1/orgs/${ORG}/triggers/${TRIGGER}/run`]: json(202, accepted),
        [`GET /v1/jobs/${JOB}`]: json(503, { message: 'restarting' }),
      },
      { session: true },
    );
    const res = await cli(['run', TRIGGER, '--wait', '--json', '--wait-timeout', '1s'], env);
    expect(res.code).toBe(6);
    expect(JSON.parse(res.stdout)).toEqual(accepted);
    expect(res.stderr).toContain(
      `the wait timed out before the coordinator answered (restarting): job ${JOB} may still run`,
    );
  }, 15_000);
});

describe('--wait-timeout on a sync trigger', () => {
  it("ends the run's own wait, exit 6, saying how to get the job back", async () => {
    const env = await start({
      [`POST /v1/triggers/${TRIGGER}/run`]: (_req, res) => {
        const late = setTimeout(() => json(200, { ...accepted, status: 'success', output: {} })(_req, res), 8_000);
        res.on('close', () => clearTimeout(late));
      },
    });
    const began = Date.now();
    const res = await cli(['run', TRIGGER, '--wait', '--wait-timeout', '1s', '--idempotency-key', 'k1'], env);
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(res).toEqual({
      code: 6,
      stdout: '',
      stderr:
        'drover: no answer from the run within --wait-timeout 1s: the job may still run; run again with ' +
        '--idempotency-key k1 to get its answer, or find it with `drover jobs`\n',
    });
  }, 15_000);
});

describe('a run whose connection is lost once it was sent (a coordinator or a proxy restarted)', () => {
  it('says the job may have started and how to get it back: exit 6 with --wait, 2 without; a refused connection is still 2', async () => {
    const env = await start({ [`POST /v1/triggers/${TRIGGER}/run`]: (req) => req.socket.destroy() });
    const waited = await cli(['run', TRIGGER, '--wait', '--idempotency-key', 'k1'], env);
    expect(waited).toEqual({
      code: 6,
      stdout: '',
      stderr:
        `drover: the coordinator at ${srv!.url} did not answer the run it was sent (UND_ERR_SOCKET): the job may have ` +
        'started and still run; run again with --idempotency-key k1 to get its answer, or find it with `drover jobs`\n',
    });
    const sent = await cli(['run', TRIGGER], env);
    expect(sent.code).toBe(2);
    expect(sent.stderr).toContain(
      '(UND_ERR_SOCKET): the job may have started and still run; find it with `drover jobs`',
    );
    const url = srv!.url;
    await srv!.close();
    srv = undefined;
    const refused = await cli(['run', TRIGGER, '--wait'], { ...env, DROVER_URL: url });
    expect(refused).toMatchObject({
      code: 2,
      stderr: `drover: cannot reach the coordinator at ${url}: ECONNREFUSED\n`,
    });
  });
});

describe('a reader of the output that went away', () => {
  it('stops quietly on EPIPE (141), and throws any other write error', () => {
    const stream = new EventEmitter();
    const stops: number[] = [];
    stopOnBrokenPipe(stream, () => stops.push(EXIT.brokenPipe));
    stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(stops).toEqual([141]);
    expect(() => stream.emit('error', Object.assign(new Error('no space'), { code: 'ENOSPC' }))).toThrow('no space');
  });

  it('exits 141 without a word when stdout is closed (`drover ... | head -1`), never 1', async () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const child = spawn(
      process.execPath,
      ['--conditions=drover-source', '--import', 'tsx', main, 'completion', 'bash'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 141, stderr: '' });
  }, 30_000);
});

describe('drover help', () => {
  it('exits 0, alone or with a command', async () => {
    const alone = testRuntime();
    expect(await runCli(['help'], alone)).toBe(0);
    expect(alone.stdout()).toContain('Usage: drover');
    const run = testRuntime();
    expect(await runCli(['help', 'run'], run)).toBe(0);
    expect(run.stdout()).toContain('Usage: drover run');
  });

  it("shows a subcommand's help, in a group too, as --help does (it showed the group's)", async () => {
    for (const words of [
      ['help', 'member', 'add'],
      ['member', 'help', 'add'],
      ['help', 'app', 'window'],
    ]) {
      const rt = testRuntime();
      expect(await runCli(words, rt)).toBe(0);
      const path = words.filter((w) => w !== 'help');
      const flag = testRuntime();
      expect(await runCli([...path, '--help'], flag)).toBe(0);
      expect(rt.stdout()).toMatch(new RegExp(`^Usage: drover ${path.join(' ')} `));
      expect(rt.stdout()).toBe(flag.stdout());
      expect(rt.stderr()).toBe('');
    }
  });

  it('refuses a command it does not know as an unknown command (exit 2), where it showed the help above it', async () => {
    for (const [words, named] of [
      [['help', 'nope'], 'nope'],
      [['help', 'member', 'nope'], 'member nope'],
      [['help', 'run', 'extra'], 'run extra'],
    ] as const) {
      const rt = testRuntime();
      expect(await runCli(words, rt)).toBe(2);
      expect(rt.stdout()).toBe('');
      expect(rt.stderr()).toBe(`drover: unknown command '${named}'\n(run with --help for usage)\n`);
    }
  });
});

describe('login --password-stdin', () => {
  it('reads the first line only, without waiting for the end of standard input', async () => {
    const stdin = new PassThrough();
    stdin.write('s3cret\r\nmore');
    await expect(readStdinLine(testRuntime({ stdin }))).resolves.toBe('s3cret');
    const split = new PassThrough();
    const line = readStdinLine(testRuntime({ stdin: split }));
    split.write('pass');
    split.write('word\n');
    await expect(line).resolves.toBe('password');
    const ended = new PassThrough();
    ended.end('no line break');
    await expect(readStdinLine(testRuntime({ stdin: ended }))).resolves.toBe('no line break');
  });
});

describe('release create --publish refused', () => {
  it('says the draft is left, with its id and how to publish it, exit 2', async () => {
    const APP = '0d6f3b2a-1c4e-4f5a-9b8c-7d6e5f4a3b2c';
    const FILE = '8b3e4d0a-6f5c-4b7d-9e9f-2a3b4c5d6e7f';
    const RELEASE = '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f';
    const base = `/v1/orgs/${ORG}/apps/${APP}/releases`;
    const draft = {
      id: RELEASE,
      applicationId: APP,
      version: '1.0.0',
      sequence: 1,
      channel: 'stable',
      updatePolicy: 'optional',
      status: 'draft',
    };
    const env = await start(
      {
        [`GET /v1/orgs/${ORG}/apps`]: json(200, [{ id: APP, slug: 'fw' }]),
        [`POST ${base}`]: json(201, draft),
        [`POST ${base}/${RELEASE}/publish`]: json(409, { code: 'conflict', message: 'The channel is frozen' }),
      },
      { session: true },
    );
    const res = await cli(['release', 'create', '1.0.0', '--app', 'fw', '--file', FILE, '--publish'], env);
    expect(res).toEqual({
      code: 2,
      stdout: `${RELEASE}\n`,
      stderr:
        'drover: the publish was refused: The channel is frozen\n' +
        `drover: release 1.0.0 was created as a draft, ${RELEASE}; publish it with ` +
        `\`drover release publish ${RELEASE} --app fw\` (\`release create\` again would make another 1.0.0)\n`,
    });
    const asJson = await cli(['release', 'create', '1.0.0', '--app', 'fw', '--file', FILE, '--publish', '--json'], env);
    expect(asJson.code).toBe(2);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ id: RELEASE, status: 'draft' });
  });
});

describe('run --wait --json on an async trigger with an API token alone', () => {
  it('prints the accepted answer before failing with exit 2 (a job, a batch)', async () => {
    const BATCH = '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f';
    const batch = { batchId: BATCH, jobIds: [JOB], jobCount: 1, status: 'pending', statusUrl: `/api/batches/${BATCH}` };
    const env = await start({
      [`POST /v1/triggers/${TRIGGER}/run`]: inTurn(json(202, accepted), json(202, batch)),
    });
    const one = await cli(['run', TRIGGER, '--wait', '--json'], env);
    expect(one.code).toBe(2);
    expect(JSON.parse(one.stdout)).toEqual(accepted);
    expect(one.stderr).toContain(`job ${JOB} keeps running`);
    const many = await cli(['run', TRIGGER, '--wait', '--json'], env);
    expect(many.code).toBe(2);
    expect(JSON.parse(many.stdout)).toEqual(batch);
    expect(many.stderr).toContain(`batch ${BATCH} keeps running`);
  });
});

describe('drover jobs --watch through an outage', () => {
  it('waits out a dropped connection and a 503 once the list answered, and says so once', async () => {
    const list = `GET /v1/orgs/${ORG}/jobs`;
    const env = await start(
      {
        [list]: inTurn(
          json(200, [job('running')]),
          (req) => req.socket.destroy(),
          json(503, { message: 'restarting' }, { 'retry-after': '1' }),
          json(200, [job('success')]),
        ),
      },
      { session: true },
    );
    const stop = new AbortController();
    const watching = cli(['jobs', '--watch'], env, stop.signal);
    const began = Date.now();
    while (srv!.calls.filter((c) => c.startsWith(list)).length < 4 && Date.now() - began < 20_000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 100)); // the fourth answer printed
    stop.abort();
    const res = await watching;
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe(
      'drover: the coordinator did not answer (UND_ERR_SOCKET); still waiting\ndrover: the coordinator answers again\n',
    );
    expect(res.stdout).toMatch(new RegExp(`${JOB} running hello\\n.* ${JOB} success hello\\n$`));
  }, 30_000);

  it('ends with exit 2 when its first look gets no answer, as without --watch', async () => {
    const env = await start({}, { session: true });
    await srv!.close();
    const res = await cli(['jobs', '--watch'], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('cannot reach the coordinator');
  });
});

describe('a change whose connection is lost once sent', () => {
  it('says that it may have been done, where a GET says the coordinator cannot be reached', async () => {
    const env = await start(
      {
        [`POST /v1/jobs/${JOB}/cancel`]: (req) => req.socket.destroy(),
        [`GET /v1/jobs/${JOB}`]: (req) => req.socket.destroy(),
      },
      { session: true },
    );
    const cancel = await cli(['cancel', JOB], env);
    expect(cancel).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `drover: the coordinator at ${srv!.url} did not answer the POST /v1/jobs/${JOB}/cancel it was sent ` +
        '(UND_ERR_SOCKET): it may have been done; look before trying again\n',
    });
    const read = await cli(['job', JOB], env);
    expect(read.stderr).toBe(`drover: cannot reach the coordinator at ${srv!.url}: UND_ERR_SOCKET\n`);
  });
});
