import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { HttpAnswer } from '../../src/http/client.js';
import { judgeAnswer } from '../../src/outbox/delivery-policy.js';
import { Outbox } from '../../src/outbox/outbox.js';
import { ReportSender, type Transport } from '../../src/outbox/report-sender.js';
import type { Report } from '../../src/outbox/report.js';
import { createMasker } from '../../src/exec/secret-masker.js';
import { Backoff } from '../../src/util/backoff.js';
import { captureLogger } from '../log-capture.js';

let dir: string;
beforeEach(() => {
  dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-outbox-')), 'outbox');
});
afterEach(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }));

const finish = (jobId: string): Report => ({
  kind: 'finish',
  jobId,
  body: { status: 'success', exitCode: 0, errorMessage: null, output: {} },
});
const bigFinish = (jobId: string): Report => ({
  kind: 'finish',
  jobId,
  body: { status: 'success', exitCode: 0, errorMessage: null, output: { x: 'y' } },
});
const logs = (jobId: string, seq: number): Report => ({
  kind: 'logs',
  jobId,
  body: { lines: [{ seq, at: '2026-01-01T00:00:00.000Z', stream: 'stdout', step: 0, text: `line ${seq}` }] },
});
/** The coordinator's answer to a report that went through (the fake transport names its job in it). */
const ok: HttpAnswer = { status: 200, body: { status: 'success' } };
const down = () => Promise.reject(new Error('connect ECONNREFUSED'));

/** A transport whose answers the test controls; it records every call. */
function fakeTransport(answer: (report: Report) => Promise<HttpAnswer>) {
  const calls: string[] = [];
  const transport: Transport = (report) => {
    calls.push(`${report.kind}:${report.jobId}${report.kind === 'logs' ? `:${report.body.lines[0]!.seq}` : ''}`);
    return answer(report).then((a) =>
      a === ok ? { status: 200, body: { jobId: report.jobId, status: 'success' } } : a,
    );
  };
  return { transport, calls };
}

const noWait = () => new Backoff({ baseMs: 1, capMs: 1, random: () => 0.5 });

describe('the outbox', () => {
  it('stores reports as files in order, atomically, and reads them back after a restart', () => {
    const outbox = Outbox.open(dir);
    outbox.append(logs('j1', 1));
    outbox.append(finish('j1'));
    outbox.append(finish('j2'));
    expect(fs.readdirSync(dir).sort()).toEqual([
      '000000000001-logs-j1.json',
      '000000000002-finish-j1.json',
      '000000000003-finish-j2.json',
    ]);
    expect(fs.statSync(path.join(dir, '000000000002-finish-j1.json')).mode & 0o777).toBe(0o600);

    const reopened = Outbox.open(dir);
    expect(reopened.entries().map((e) => e.report)).toEqual([logs('j1', 1), finish('j1'), finish('j2')]);
    expect(reopened.has('j1', 'finish')).toBe(true);
    expect(reopened.has('j3')).toBe(false);
    reopened.remove(reopened.entries()[0]!);
    reopened.append(logs('j3', 1));
    expect(fs.readdirSync(dir).sort().at(-1)).toBe('000000000004-logs-j3.json');
  });

  it('makes outbox/ again when it was removed while the agent ran, and stores the reports there', () => {
    const outbox = Outbox.open(dir);
    outbox.append(finish('j1'));
    fs.rmSync(dir, { recursive: true }); // cleared by hand
    // The result was kept in memory only (lost with the agent), and every log batch dropped, until a restart.
    expect(outbox.append(finish('j2'))?.inMemory).toBeUndefined();
    expect(outbox.append(logs('j3', 1))).not.toBeNull();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(
      Outbox.open(dir)
        .entries()
        .map((e) => e.report),
    ).toEqual([finish('j2'), logs('j3', 1)]);
  });

  it('sets a damaged file aside and reports it, and ignores temporary files', () => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, '000000000001-finish-j1.json'), '{"kind": "finish"');
    fs.writeFileSync(path.join(dir, '000000000002-finish-j2.json'), JSON.stringify(finish('j2')));
    fs.writeFileSync(path.join(dir, '.000000000003-finish-j3.json.abc.tmp'), 'half');
    const damaged: string[] = [];
    const outbox = Outbox.open(dir, (file) => damaged.push(path.basename(file)));
    expect(outbox.entries().map((e) => e.report.jobId)).toEqual(['j2']);
    expect(damaged).toEqual(['000000000001-finish-j1.json']);
    expect(fs.existsSync(path.join(dir, '000000000001-finish-j1.json.damaged'))).toBe(true);
  });

  it('leaves a damaged file it cannot rename *.damaged where it is, says so, and opens all the same', () => {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, '000000000001-finish-j1.json');
    fs.writeFileSync(file, '{"kind": "finish"');
    // Tests run as root, which writes in a read-only directory: a directory in the way of the rename fails it.
    fs.mkdirSync(path.join(dir, '000000000001-finish-j1.json.damaged', 'x'), { recursive: true });
    fs.writeFileSync(path.join(dir, '000000000002-finish-j2.json'), JSON.stringify(finish('j2')));
    const damaged: [string, string][] = [];
    const outbox = Outbox.open(dir, (f, reason) => damaged.push([f, reason]));
    expect(outbox.entries().map((e) => e.report.jobId)).toEqual(['j2']);
    expect(damaged).toEqual([
      [
        file,
        'not a report; it cannot be renamed *.damaged (a directory already has that name (EISDIR)), so it stays ' +
          'where it is, skipped at each start: move it out of the outbox or remove it',
      ],
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe('{"kind": "finish"');
    expect(outbox.append(finish('j3'))?.name).toBe('000000000003-finish-j3.json');
  });

  it('leaves a file it cannot read in place, says why, and reads it again later, never taking it for damage', () => {
    fs.mkdirSync(dir, { recursive: true });
    // Tests run as root, which reads a file of mode 000: a directory in a file's place fails to read (EISDIR).
    const first = path.join(dir, '000000000001-finish-j1.json');
    fs.mkdirSync(first);
    fs.writeFileSync(path.join(dir, '000000000002-finish-j2.json'), JSON.stringify(finish('j2')));
    let now = 1_000_000;
    const damaged: string[] = [];
    const { logger, records } = captureLogger();
    const outbox = Outbox.open(dir, { onDamaged: (file) => damaged.push(file), logger, now: () => now });
    expect(outbox.entries().map((e) => e.report.jobId)).toEqual(['j2']);
    expect(damaged).toEqual([]);
    expect(fs.statSync(first).isDirectory()).toBe(true);
    expect(fs.readdirSync(dir).some((name) => name.endsWith('.damaged'))).toBe(false);
    expect(records.map((r) => [r.level, r.file, r.msg])).toEqual([
      [
        50,
        first,
        `cannot read the report ${first}: a directory stands in its place (EISDIR). It stays in the outbox, not ` +
          'sent until it can be read: read again in 1m, then less often (every 1h at most), and at each start',
      ],
    ]);
    expect(outbox.unreadable).toBe(1);
    expect(outbox.nextUnreadableRetryAt()).toBe(now + 60_000);

    // Not before its time; then, still unreadable, twice as long, and not said again.
    now += 59_999;
    expect(outbox.retryUnreadable()).toBe(0);
    now += 1;
    expect(outbox.retryUnreadable()).toBe(0);
    expect(outbox.nextUnreadableRetryAt()).toBe(now + 120_000);
    expect(records).toHaveLength(1);

    // Put right: the report takes its place, before the ones after it.
    fs.rmdirSync(first);
    fs.writeFileSync(first, JSON.stringify(finish('j1')));
    now += 120_000;
    expect(outbox.retryUnreadable()).toBe(1);
    expect(outbox.entries().map((e) => e.report.jobId)).toEqual(['j1', 'j2']);
    expect(outbox.unreadable).toBe(0);
    expect(outbox.nextUnreadableRetryAt()).toBeNull();
    expect(records.at(-1)).toMatchObject({ level: 30, file: first });
    expect(damaged).toEqual([]);
  });

  it('names a permission or an I/O error, and takes only what was read and does not parse for damage', () => {
    fs.mkdirSync(dir, { recursive: true });
    for (const n of [1, 2, 3]) fs.writeFileSync(path.join(dir, `00000000000${n}-finish-j${n}.json`), '{"kind": "fin');
    const failing: Record<string, string> = { 'j1.json': 'EACCES', 'j2.json': 'EIO' };
    const readFile = (file: string) => {
      const code = failing[file.slice(-7)];
      if (code) throw Object.assign(new Error(`${code}: cannot read`), { code });
      return fs.readFileSync(file, 'utf8');
    };
    const damaged: string[] = [];
    const { logger, records } = captureLogger();
    let now = 0;
    const outbox = Outbox.open(dir, {
      onDamaged: (f) => damaged.push(path.basename(f)),
      logger,
      readFile,
      now: () => now,
    });
    expect(damaged).toEqual(['000000000003-finish-j3.json']);
    expect(records.map((r) => r.msg)).toEqual([
      expect.stringContaining(
        ": permission denied (EACCES): it belongs to another user or is not readable; give it back to the agent's user (chown, chmod 600). It stays",
      ),
      expect.stringContaining(': an input/output error (EIO): the disk or its file system may be failing. It stays'),
    ]);
    expect(fs.readdirSync(dir).sort()).toEqual([
      '000000000001-finish-j1.json',
      '000000000002-finish-j2.json',
      '000000000003-finish-j3.json.damaged',
    ]);
    // Read at last, the content of j1 does not parse: that is damage. j2 went away: said, forgotten.
    delete failing['j1.json'];
    delete failing['j2.json'];
    fs.rmSync(path.join(dir, '000000000002-finish-j2.json'));
    now += 60_000;
    expect(outbox.retryUnreadable()).toBe(0);
    expect(damaged).toEqual(['000000000003-finish-j3.json', '000000000001-finish-j1.json']);
    expect(records.at(-1)!.msg).toMatch(/000000000002-finish-j2\.json, which could not be read, is gone/);
    expect(outbox.unreadable).toBe(0);
  });

  it.skipIf(process.getuid?.() === 0)('leaves a file of mode 000 in place (as any user but root)', () => {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, '000000000001-finish-j1.json');
    fs.writeFileSync(file, JSON.stringify(finish('j1')), { mode: 0o000 });
    const { logger, records } = captureLogger();
    const outbox = Outbox.open(dir, { logger });
    expect(outbox.unreadable).toBe(1);
    expect(fs.existsSync(file)).toBe(true);
    expect(records[0]!.msg).toContain('permission denied (EACCES)');
  });
});

describe('delivery of reports', () => {
  it('sends a report of the outbox that could not be read once it can be, before the newer ones', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    onTestFinished(() => void vi.useRealTimers());
    fs.mkdirSync(dir, { recursive: true });
    const first = path.join(dir, '000000000001-finish-j1.json');
    fs.mkdirSync(first);
    const outbox = Outbox.open(dir, { logger: captureLogger().logger });
    const { transport, calls } = fakeTransport(() => Promise.resolve(ok));
    const sender = new ReportSender({ outbox, transport, logger: captureLogger().logger, backoff: noWait() });
    onTestFinished(() => sender.close());
    await sender.send(finish('j2'));
    expect(calls).toEqual(['finish:j2']);
    fs.rmdirSync(first);
    fs.writeFileSync(first, JSON.stringify(finish('j1')));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toEqual(['finish:j2', 'finish:j1']);
    expect(outbox.size).toBe(0);
    expect(fs.existsSync(first)).toBe(false);
  });

  it('retries network errors, 5xx, 401, 408 and 429, and drops other 4xx', () => {
    const r = finish('j');
    expect(judgeAnswer(r, { status: 200, body: { jobId: 'j', status: 'success' } }).verdict).toBe('delivered');
    for (const status of [500, 502, 503, 401, 408, 429])
      expect(judgeAnswer(r, { status, body: null }).verdict).toBe('retry');
    expect(judgeAnswer(r, { error: new Error('ECONNRESET') }).verdict).toBe('retry');
    expect(judgeAnswer(r, { status: 409, body: { message: 'x' } })).toEqual({
      verdict: 'drop',
      reason: 'HTTP 409: x',
      expected: true,
    });
    // Log lines of a job that ended on the coordinator: refused, and expected (no warning).
    expect(judgeAnswer(logs('j', 1), { status: 409, body: {} })).toMatchObject({ verdict: 'drop', expected: true });
    expect(judgeAnswer(logs('j', 1), { status: 422, body: {} })).toMatchObject({ verdict: 'drop', expected: false });
    for (const status of [400, 404, 422]) expect(judgeAnswer(r, { status, body: {} }).verdict).toBe('drop');
  });

  it("counts only the coordinator's answers: a proxy's or captive portal's page, or a redirect, is tried again", () => {
    const r = finish('j');
    const portal = '<html>Please log in to the Wi-Fi</html>';
    for (const answer of [
      { status: 200, body: portal },
      { status: 200, body: {} },
      { status: 200, body: { jobId: 'another', status: 'success' } },
      { status: 204, body: null },
      { status: 302, body: '' },
      { status: 404, body: portal },
      { status: 403, body: null },
    ]) {
      expect(judgeAnswer(r, answer), JSON.stringify(answer)).toMatchObject({
        verdict: 'retry',
        reason: expect.stringMatching(/a proxy or captive portal in between\?\)$/),
      });
    }
    expect(judgeAnswer(r, { status: 302, body: '' })).toMatchObject({
      reason: 'HTTP 302, a redirect (a proxy or captive portal in between?)',
    });
    expect(judgeAnswer(r, { status: 200, body: { jobId: 'J', status: 'success' } }).verdict).toBe('delivered');
  });

  it('keeps what cannot be delivered in the outbox, and everything after it, then sends it all in order', async () => {
    let online = false;
    const { transport, calls } = fakeTransport(() => (online ? Promise.resolve(ok) : down()));
    const settled: string[] = [];
    const { logger, records } = captureLogger();
    const outbox = Outbox.open(dir);
    const sender = new ReportSender({
      outbox,
      transport,
      logger,
      backoff: new Backoff({ baseMs: 60_000, capMs: 60_000 }),
      onSettled: (report, outcome) => settled.push(`${report.kind}:${report.jobId}:${outcome}`),
    });
    expect(await sender.send(logs('j1', 1))).toEqual({ outcome: 'stored' });
    online = true; // back, but the outbox is not empty: the next report must wait its turn
    expect(await sender.send(logs('j1', 2))).toEqual({ outcome: 'stored' });
    const kept = await sender.send(finish('j1'));
    expect(kept).toEqual({ outcome: 'stored', delivery: expect.any(Promise) });
    expect(calls).toEqual(['logs:j1:1']);
    expect(outbox.size).toBe(3);
    expect(records.some((r) => /keeping them in the outbox/.test(r.msg))).toBe(true);

    expect(await sender.drainNow()).toBe(true);
    expect(calls).toEqual(['logs:j1:1', 'logs:j1:1', 'logs:j1:2', 'finish:j1']);
    expect(settled).toEqual(['logs:j1:delivered', 'logs:j1:delivered', 'finish:j1:delivered']);
    // A report other than a log batch tells how it ended to whoever waits for it (a job's start).
    expect(kept.outcome === 'stored' && (await kept.delivery)).toMatchObject({ outcome: 'delivered' });
    expect(outbox.size).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(await sender.send(finish('j2'))).toMatchObject({ outcome: 'delivered' });
    sender.close();
  });

  it('delivers what a previous run left in the outbox before anything new', async () => {
    const before = Outbox.open(dir);
    before.append(finish('old'));
    const { transport, calls } = fakeTransport(() => Promise.resolve(ok));
    const sender = new ReportSender({
      outbox: Outbox.open(dir),
      transport,
      logger: captureLogger().logger,
      backoff: noWait(),
    });
    expect(sender.offline).toBe(true);
    const sent = sender.send(finish('new'));
    await sender.drainNow();
    await sent;
    await sender.drainNow();
    expect(calls).toEqual(['finish:old', 'finish:new']);
    sender.close();
  });

  it('retries on its own with backoff until the coordinator answers', async () => {
    // The retry timer runs on fake timers; the waits are half of 1 s, 2 s, 4 s (random 0.5).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => void vi.useRealTimers());
    let failures = 3;
    const { transport, calls } = fakeTransport(() =>
      failures-- > 0 ? Promise.resolve({ status: 503, body: null }) : Promise.resolve(ok),
    );
    const outbox = Outbox.open(dir);
    const backoff = new Backoff({ baseMs: 1000, capMs: 30_000, random: () => 0.5 });
    const sender = new ReportSender({ outbox, transport, logger: captureLogger().logger, backoff });
    await sender.send(finish('j'));
    expect(calls).toHaveLength(1);
    for (const waitMs of [500, 1000, 2000]) {
      const before = calls.length;
      await vi.advanceTimersByTimeAsync(waitMs - 1);
      expect(calls).toHaveLength(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(calls).toHaveLength(before + 1);
    }
    expect(outbox.size).toBe(0);
    expect(calls).toEqual(['finish:j', 'finish:j', 'finish:j', 'finish:j']);
    sender.close();
  });

  it('drops a report the coordinator refuses for good, and goes on with the next', async () => {
    const { transport, calls } = fakeTransport((r) =>
      Promise.resolve(r.jobId === 'gone' ? { status: 404, body: { message: 'Job not found' } } : ok),
    );
    const { logger, records } = captureLogger();
    const settled: string[] = [];
    const sender = new ReportSender({
      outbox: Outbox.open(dir),
      transport,
      logger,
      onSettled: (report, outcome) => settled.push(`${report.jobId}:${outcome}`),
    });
    expect(await sender.send(finish('gone'))).toMatchObject({ outcome: 'dropped', reason: 'HTTP 404: Job not found' });
    expect(await sender.send(finish('next'))).toMatchObject({ outcome: 'delivered' });
    expect(calls).toEqual(['finish:gone', 'finish:next']);
    expect(settled).toEqual(['gone:dropped', 'next:delivered']);
    expect(records.find((r) => r.jobId === 'gone')).toMatchObject({ level: 40, report: 'finish' });
    sender.close();
  });

  it('drops the log lines of a job that ended on the coordinator (409) once, in order, and says so without a warning', async () => {
    let online = false;
    const { transport, calls } = fakeTransport((r) => {
      if (!online) return down();
      return Promise.resolve(r.jobId === 'ended' ? { status: 409, body: { message: 'The job is failed' } } : ok);
    });
    const { logger, records } = captureLogger();
    const outbox = Outbox.open(dir);
    const sender = new ReportSender({ outbox, transport, logger, backoff: noWait() });
    // Kept while the coordinator is away, then sent in order: the refused batch is not retried.
    await sender.send(logs('ended', 1));
    await sender.send(logs('open', 1));
    await sender.send(finish('open'));
    online = true;
    calls.length = 0;
    expect(await sender.drainNow()).toBe(true);
    expect(await sender.drainNow()).toBe(true);
    expect(calls).toEqual(['logs:ended:1', 'logs:open:1', 'finish:open']);
    expect(outbox.size).toBe(0);
    const refused = records.filter((r) => r.jobId === 'ended');
    expect(refused).toEqual([
      expect.objectContaining({
        level: 30,
        report: 'logs',
        msg: 'job ended has ended on the coordinator, which takes no more of its log lines (HTTP 409: The job is failed)',
      }),
    ]);
    sender.close();
  });

  it('masks secret values in every report it sends or keeps: lines, rejections, results and their outputs', async () => {
    const sent: Report[] = [];
    let online = false;
    const transport: Transport = (report) => {
      if (!online) return down();
      sent.push(report);
      return Promise.resolve({ status: 200, body: { jobId: report.jobId, status: 'success' } });
    };
    const known = createMasker(['hunter2']);
    const outbox = Outbox.open(dir);
    const sender = new ReportSender({ outbox, transport, logger: captureLogger().logger, masker: () => known });
    const at = '2026-01-01T00:00:00.000Z';
    await sender.send({
      kind: 'logs',
      jobId: 'j',
      body: { lines: [{ seq: 1, at, stream: 'stdout', text: 'pw hunter2' }] },
    });
    await sender.send({ kind: 'reject', jobId: 'k', body: { reason: 'invalid_params', message: 'bad: hunter2' } });
    const result = { status: 'failed', exitCode: null, errorMessage: 'the agent failed: hunter2' } as const;
    await sender.send({ kind: 'finish', jobId: 'j', body: { ...result, output: { key_hunter2: ['x hunter2'] } } });
    // Kept in the outbox while the coordinator is away: masked on disk too.
    expect(
      fs
        .readdirSync(dir)
        .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
        .join(''),
    ).not.toContain('hunter2');
    online = true;
    expect(await sender.drainNow()).toBe(true);
    expect(JSON.stringify(sent)).not.toContain('hunter2');
    expect(sent.map((r) => ('body' in r ? r.body : null))).toEqual([
      { lines: [{ seq: 1, at, stream: 'stdout', text: 'pw ***' }] },
      { reason: 'invalid_params', message: 'bad: ***' },
      { ...result, errorMessage: 'the agent failed: ***', output: { 'key_***': ['x ***'] } },
    ]);
    sender.close();
  });

  it('replaces a finish refused as too large by a plain failure, so the job still ends', async () => {
    const bodies: Report[] = [];
    const { transport } = fakeTransport((r) => {
      bodies.push(r);
      return Promise.resolve(
        r.kind === 'finish' && Object.keys(r.body.output).length > 0
          ? { status: 413, body: { message: 'The request body is too large' } }
          : ok,
      );
    });
    const settled: string[] = [];
    const sender = new ReportSender({
      outbox: Outbox.open(dir),
      transport,
      logger: captureLogger().logger,
      onSettled: (report, outcome) => settled.push(`${report.jobId}:${outcome}`),
    });
    const big: Report = bigFinish('big');
    expect(await sender.send(big)).toMatchObject({ outcome: 'delivered' });
    expect(bodies.map((r) => (r.kind === 'finish' ? r.body : null))).toEqual([
      { status: 'success', exitCode: 0, errorMessage: null, output: { x: 'y' } },
      {
        status: 'failed',
        exitCode: 0,
        errorMessage:
          'the coordinator refused the result (HTTP 413: The request body is too large); the job ended success with exit code 0',
        output: {},
      },
    ]);
    expect(settled).toEqual(['big:delivered']);
    sender.close();
  });

  it('sends the stand-in of a finish refused while draining the outbox, in the same drain', async () => {
    const outbox = Outbox.open(dir);
    outbox.append(bigFinish('big'));
    const { transport, calls } = fakeTransport((r) =>
      Promise.resolve(
        r.kind === 'finish' && Object.keys(r.body.output).length > 0
          ? { status: 413, body: { message: 'too large' } }
          : ok,
      ),
    );
    const sender = new ReportSender({ outbox, transport, logger: captureLogger().logger, backoff: noWait() });
    expect(await sender.drainNow()).toBe(true);
    expect(calls).toEqual(['finish:big', 'finish:big']);
    expect(outbox.size).toBe(0);
    sender.close();
  });

  it('gives up flushing at shutdown after the time limit, leaving the reports on disk', async () => {
    const { transport } = fakeTransport(() => new Promise<HttpAnswer>(() => {}));
    const outbox = Outbox.open(dir);
    outbox.append(finish('j'));
    const sender = new ReportSender({ outbox, transport, logger: captureLogger().logger });
    expect(await sender.flush(100)).toBe(false);
    sender.close();
    expect(Outbox.open(dir).size).toBe(1);
  });
});
