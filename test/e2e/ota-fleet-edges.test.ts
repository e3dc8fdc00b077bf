import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { artifactUploader, createApp, uploadArtifact, type ReleaseBody } from '../helpers/ota.js';

/**
 * Edges of the fleet and OTA management API found by review: inputs at the limits that the
 * coordinator must refuse with a clear 4xx, never a 500, leaving nothing half-written. Real
 * coordinator over HTTP.
 */
describe('OTA and fleet edges', () => {
  let t: TestCoordinator;
  let uploader: ApiClient;
  let artifact: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    uploader = await artifactUploader(t);
    artifact = await uploadArtifact(uploader, 'artifact');
  });
  afterAll(() => t?.close());

  const releases = (appId: string) => `/orgs/${t.orgId}/apps/${appId}/releases`;
  const create = (appId: string, body: Record<string, unknown>) =>
    t.owner.post(releases(appId), { body: { artifactFileId: artifact, ...body } });

  it('gives no sequence past 2^53 − 1: a release after the highest one is a 409, not a number kept rounded', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'last-sequence' });
    const last = await create(app.id, { version: 'last', sequence: Number.MAX_SAFE_INTEGER });
    expect(last.status, last.text).toBe(201);
    expect(last.body.sequence).toBe(Number.MAX_SAFE_INTEGER);
    // The next one would be 2^53: stored, then every creation after it would take 2^53 again (a 500).
    for (const version of ['next', 'again']) {
      const next = await create(app.id, { version });
      expect(next.status, next.text).toBe(409);
      expect(next.body).toEqual({
        statusCode: 409,
        code: 'conflict',
        message: `The application has no sequence left to give a release: the highest is ${Number.MAX_SAFE_INTEGER}, and a sequence is at most ${Number.MAX_SAFE_INTEGER} (2^53 − 1)`,
        details: { maxSequence: Number.MAX_SAFE_INTEGER },
      });
    }
    const list = await t.owner.get<ReleaseBody[]>(releases(app.id));
    expect(list.body.map((r) => r.sequence)).toEqual([Number.MAX_SAFE_INTEGER]);
  });

  it('refuses a release version with a C1 control character or a bidirectional override (created or changed), as docs/ota.md says', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'versions' });
    const message =
      'must not contain control characters or bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069)';
    // U+009B is a terminal's CSI (as ESC [), U+0085 a line break; U+202E shows `2.0‮1.3` as `2.03.1`.
    for (const version of ['1.0\u009b31m', '1.0\u0085', '2.0\u202e1.3', '2.0\u20671.3', '1.0\u0007']) {
      const res = await create(app.id, { version });
      expect(res.status, res.text).toBe(422);
      expect(res.body.details).toEqual([{ path: 'body.version', message }]);
    }
    const draft = await create(app.id, { version: '2.4.0-rc.1+build.7 (Müller)' });
    expect(draft.status, draft.text).toBe(201);
    const changed = await t.owner.patch(`${releases(app.id)}/${draft.body.id}`, { body: { version: '2.0\u202e1.3' } });
    expect(changed.status, changed.text).toBe(422);
    expect(changed.body.details).toEqual([{ path: 'body.version', message }]);
    const list = await t.owner.get<ReleaseBody[]>(releases(app.id));
    expect(list.body.map((r) => r.version)).toEqual(['2.4.0-rc.1+build.7 (Müller)']);
  });
});
