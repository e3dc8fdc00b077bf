import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair, privateKeyFromBase64 } from '@drover/shared';
import { WorkflowRegistry } from '../../src/daemon/workflow-registry.js';
import type { SignedCaller } from '../../src/http/client.js';
import { SELF_UPDATE_WORKFLOW, selfUpdateWorkflow } from '../../src/self-update/builtin-workflow.js';
import { captureLogger } from '../log-capture.js';

describe('the workflow registry with the built-in drover-agent-update', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-registry-'));
    fs.writeFileSync(path.join(dir, 'hello.yaml'), 'name: hello\nsteps:\n  - run: echo hi\n');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const registry = (logger = captureLogger().logger) =>
    new WorkflowRegistry({
      dir,
      caller: {} as SignedCaller,
      logger,
      builtins: [selfUpdateWorkflow(120_000)],
    });

  it('reports it with the files, runs it only as an update workflow, and counts only the files as loaded', async () => {
    const r = registry();
    await r.load();
    expect(r.definitions().map((w) => w.name)).toEqual([SELF_UPDATE_WORKFLOW, 'hello']);
    expect(r.get(SELF_UPDATE_WORKFLOW)?.description).toMatch(/^Built into drover-agent/);
    expect(r.summary().loaded).toBe(1);
    // A trigger job of it is refused (update jobs take it through r.get).
    expect(r.problemWith(SELF_UPDATE_WORKFLOW)).toBe(
      "the workflow drover-agent-update is built into the agent and runs only as an application's update workflow (over-the-air)",
    );
    expect(r.problemWith('hello')).toBeNull();
  });

  it('skips a workflow file of the same name, saying so', async () => {
    fs.writeFileSync(path.join(dir, 'mine.yaml'), `name: ${SELF_UPDATE_WORKFLOW}\nsteps:\n  - run: rm -rf /\n`);
    const { logger, records } = captureLogger();
    const r = registry(logger);
    await r.load();
    expect(r.get(SELF_UPDATE_WORKFLOW)?.steps[0]?.run).toBe('<artifact> --version');
    expect(r.definitions().filter((w) => w.name === SELF_UPDATE_WORKFLOW)).toHaveLength(1);
    expect(records.map((x) => x.msg)).toContain(
      'workflow file skipped: mine.yaml defines drover-agent-update, a workflow built into the agent',
    );
  });
});

describe('a refusal of the workflow set', () => {
  let dir: string;
  let server: http.Server;
  let answer: { status: number; body: unknown };
  const caller = (origin: string): SignedCaller => ({
    origin,
    agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
    privateKey: privateKeyFromBase64(generateEd25519KeyPair().privateKey),
  });
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-registry-'));
    fs.writeFileSync(path.join(dir, 'hello.yaml'), 'name: hello\nsteps:\n  - run: echo hi\n');
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body)),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const refusedWith = async (status: number, body: unknown) => {
    answer = { status, body };
    const { logger, records } = captureLogger();
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const r = new WorkflowRegistry({ dir, caller: caller(origin), logger });
    await r.load();
    await r.report(true); // a refusal is not thrown: it is logged, and not sent again
    return records.filter((x) => x.level >= 40);
  };

  it('is logged with its details when they are a list of path and message', async () => {
    const logged = await refusedWith(422, {
      code: 'validation_failed',
      message: 'Invalid workflows',
      details: [{ path: '/workflows/0/steps', message: 'too many' }, 'junk', { path: 3 }],
    });
    expect(logged.map((x) => x.msg)).toEqual([
      'the coordinator refused the workflow set (Invalid workflows): /workflows/0/steps: too many',
    ]);
  });

  it('is logged when its details are not a list (an object, a text) or absent, kept in the record as they came', async () => {
    const object = await refusedWith(422, { message: 'Invalid workflows', details: { path: '/workflows' } });
    expect(object.map((x) => [x.msg, x.details])).toEqual([
      ['the coordinator refused the workflow set (Invalid workflows)', { path: '/workflows' }],
    ]);
    const text = await refusedWith(400, { message: 'Bad request', details: 'nope' });
    expect(text.map((x) => x.msg)).toEqual(['the coordinator refused the workflow set (Bad request)']);
    const none = await refusedWith(413, { message: 'Too large' });
    expect(none.map((x) => x.msg)).toEqual(['the coordinator refused the workflow set (Too large)']);
  });
});
