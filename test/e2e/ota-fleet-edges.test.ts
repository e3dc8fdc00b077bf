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
    t.owner.post<ReleaseBody>(releases(appId), { body: { artifactFileId: artifact, ...body } });

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
});
