import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRaw } from '../helpers/raw-socket.js';
import { DAY, HOUR, MINUTE, startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/** Idempotency-Key on trigger runs: same key and body, different body, concurrency, scope, expiry. */

describe('trigger-run idempotency', () => {
  let f: RunFixture;
  let build: { id: string };
  let token: string;
  let n = 0;
  const key = () => `key-${++n}-${'k'.repeat(8)}`;
  const withKey = (k: string) => ({ 'idempotency-key': k });

  beforeAll(async () => {
    f = await startRunFixture();
    build = await f.createTrigger({ workflowName: 'build' });
    token = await f.token([build.id]);
  });
  afterAll(() => f?.close());

  it("answers a repeat with the first call's job id and idempotent: true, making one job", async () => {
    const k = key();
    const first = await f.run(token, build.id, { ref: 'main', params: { a: 1, b: [1, 2] } }, withKey(k));
    expect(first.status).toBe(202);
    expect(first.body).toEqual({
      jobId: expect.any(String),
      status: 'pending',
      statusUrl: `/api/jobs/${first.body.jobId}`,
    });
    // Same body, keys in another order.
    const again = await f.run(token, build.id, { params: { b: [1, 2], a: 1.0 }, ref: 'main' }, withKey(k));
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ ...first.body, idempotent: true });
    expect((await f.jobsOf(build.id)).filter((j) => j.id === first.body.jobId)).toHaveLength(1);
  });

  it('answers a repeat as the first call was answered, status pending, even after the job ended', async () => {
    const k = key();
    const first = await f.run(token, build.id, {}, withKey(k));
    expect(first.body.status).toBe('pending');
    await f.finish(first.body.jobId, { status: 'success', exitCode: 0 });
    const again = await f.run(token, build.id, {}, withKey(k));
    expect(again.status).toBe(202);
    expect(again.body).toEqual({
      jobId: first.body.jobId,
      status: 'pending',
      statusUrl: first.body.statusUrl,
      idempotent: true,
    });
  });

  it('answers 409 idempotency_conflict when the key comes back with a different body', async () => {
    const k = key();
    const before = (await f.jobsOf(build.id)).length;
    expect((await f.run(token, build.id, { ref: 'a' }, withKey(k))).status).toBe(202);
    const res = await f.run(token, build.id, { ref: 'b' }, withKey(k));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ statusCode: 409, code: 'idempotency_conflict', message: expect.any(String) });
    expect((await f.run(token, build.id, undefined, withKey(k))).status).toBe(409);
    expect((await f.jobsOf(build.id)).length).toBe(before + 1);
  });

  it('treats no body and an empty object as the same body', async () => {
    const k = key();
    const first = await f.run(token, build.id, undefined, withKey(k));
    const again = await f.run(token, build.id, {}, withKey(k));
    expect(again.body).toMatchObject({ jobId: first.body.jobId, idempotent: true });
  });

  it('makes exactly one job from 50 concurrent calls with one key', async () => {
    const k = key();
    const before = (await f.jobsOf(build.id)).length;
    const results = await Promise.all(
      Array.from({ length: 50 }, () => f.run(token, build.id, { ref: 'concurrent' }, withKey(k))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(202));
    expect(new Set(results.map((r) => r.body.jobId)).size).toBe(1);
    expect(results.filter((r) => r.body.idempotent !== true)).toHaveLength(1);
    expect((await f.jobsOf(build.id)).length).toBe(before + 1);
  });

  it('tracks keys per trigger and per workflow name', async () => {
    const other = await f.createTrigger({ workflowName: 'build', name: 'other' });
    const any = await f.createTrigger({ scopeType: 'agent', workflowName: null, name: 'any' });
    const tok = await f.token([build.id, other.id, any.id]);
    const k = key();
    const a = await f.run(tok, build.id, {}, withKey(k));
    const b = await f.run(tok, other.id, {}, withKey(k));
    expect(b.status).toBe(202);
    expect(b.body.jobId).not.toBe(a.body.jobId);
    expect(b.body.idempotent).toBeUndefined();
    const lint = await f.run(tok, any.id, { workflowName: 'lint' }, withKey(k));
    const buildRun = await f.run(tok, any.id, { workflowName: 'build' }, withKey(k));
    expect([lint.status, buildRun.status]).toEqual([202, 202]);
    expect(buildRun.body.jobId).not.toBe(lint.body.jobId);
    const lintAgain = await f.run(tok, any.id, { workflowName: 'lint' }, withKey(k));
    expect(lintAgain.body).toMatchObject({ jobId: lint.body.jobId, idempotent: true });
  });

  it('refuses keys that are empty or longer than 255 characters, and accepts 255', async () => {
    for (const bad of ['', 'k'.repeat(256)]) {
      const res = await f.run(token, build.id, {}, withKey(bad));
      expect(res.status, res.text).toBe(422);
      expect(res.body.details).toEqual([{ path: 'headers.idempotency-key', message: expect.any(String) }]);
    }
    expect((await f.run(token, build.id, {}, withKey('k'.repeat(255)))).status).toBe(202);
  });

  it('refuses a key sent twice with 422, and takes a single key holding a comma as it is', async () => {
    // fetch, as Node's server, joins repeated headers into one value: the request is written by hand.
    const send = async (keys: string[]) => {
      const body = '{}';
      const lines = [
        `POST /v1/triggers/${build.id}/run HTTP/1.1`,
        'host: localhost',
        `authorization: Bearer ${token}`,
        'content-type: application/json',
        `content-length: ${body.length}`,
        'connection: close',
        ...keys.map((k) => `idempotency-key: ${k}`),
      ];
      const raw = await openRaw(f.t.url, `${lines.join('\r\n')}\r\n\r\n${body}`);
      await raw.closed;
      return { status: raw.status(), body: JSON.parse(raw.received().split('\r\n\r\n')[1]!) };
    };
    const k = key();
    const twice = await send([`${k}-a`, `${k}-b`]);
    expect(twice.status).toBe(422);
    expect(twice.body.details).toEqual([{ path: 'headers.idempotency-key', message: 'must be sent once' }]);
    const same = await send([k, k]);
    expect(same.status).toBe(422);
    // A key with a comma sent once is that key, not two: its repeat answers the first call.
    const first = await send([`${k}-a, ${k}-b`]);
    expect(first.status).toBe(202);
    expect((await f.run(token, build.id, {}, withKey(`${k}-a, ${k}-b`))).body).toEqual({
      ...first.body,
      idempotent: true,
    });
  });

  it('does not remember a key whose call was refused by a rate limit', async () => {
    const limited = await f.createTrigger({ workflowName: 'lint', name: 'limited' });
    const tok = await f.token([limited.id], { rateLimitPerMinute: 1 });
    expect((await f.run(tok, limited.id, {})).status).toBe(202);
    const k = key();
    const refused = await f.run(tok, limited.id, {}, withKey(k));
    expect(refused.status).toBe(429);
    f.clock.advance(MINUTE);
    const retried = await f.run(tok, limited.id, {}, withKey(k));
    expect(retried.status).toBe(202);
    expect(retried.body.idempotent).toBeUndefined();
  });

  it('forgets a key after 24 hours', async () => {
    const k = key();
    const first = await f.run(token, build.id, { ref: 'x' }, withKey(k));
    f.clock.advance(DAY - HOUR);
    expect((await f.run(token, build.id, { ref: 'x' }, withKey(k))).body).toMatchObject({
      jobId: first.body.jobId,
      idempotent: true,
    });
    f.clock.advance(HOUR);
    const later = await f.run(token, build.id, { ref: 'y' }, withKey(k));
    expect(later.status).toBe(202);
    expect(later.body.jobId).not.toBe(first.body.jobId);
    expect(later.body.idempotent).toBeUndefined();
    // Expired keys are purged from the table, not only ignored (rows the API does not show), a
    // minute after they expire: a coordinator whose clock is a little behind still sees them valid.
    f.clock.advance(MINUTE);
    expect((await f.run(token, build.id, { ref: 'z' })).status).toBe(202);
    const rows = await f.t.sql.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM idempotency_keys WHERE expires_at <= ?',
      new Date(f.clock.now() - MINUTE).toISOString(),
    );
    expect(rows).toEqual({ n: 0 });
  });
});
