import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, bindDevices, createApp, release, uploadArtifact } from '../helpers/ota.js';
import { openAgentStream, type AgentStream } from '../helpers/sse.js';

/**
 * A large publish spreads its devices' starts (docs/ota.md, "The `deploy` event"): the `deploy`
 * events of an evaluation the fleet cannot start within a second at `DROVER_UPDATE_STARTS_PER_SECOND`
 * carry `startWithinMs`. At one start a second, two devices at once are a large publish.
 */

let t: TestCoordinator;
const streams: AgentStream[] = [];
beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_UPDATE_STARTS_PER_SECOND: '1' } });
});
afterAll(async () => {
  for (const s of streams) s.close();
  await t?.close();
});

async function streamingAgent() {
  const agent = await enrollTestAgent(t.owner, t.orgId);
  const s = await openAgentStream(t.url, agent);
  expect(s.status).toBe(200);
  streams.push(s);
  return { agent, s };
}
const nextDeploy = async (s: AgentStream) => JSON.parse((await s.next((e) => e.event === 'deploy')).data);

describe('the deploy events of a large evaluation', () => {
  it('carry startWithinMs, the time the fleet takes to start at the configured pace; a small one none', async () => {
    const uploader = await artifactUploader(t);
    const artifactFileId = await uploadArtifact(uploader, 'spread 1.0');
    const app = await createApp(t.owner, t.orgId, { slug: 'spread', updateWorkflowName: 'apply' });
    await release(t.owner, t.orgId, app.id, { version: '1.0', artifactFileId });

    const [a, b, c] = [await streamingAgent(), await streamingAgent(), await streamingAgent()];
    const bound = await bindDevices(t.owner, t.orgId, app.id, [a.agent.agentId, b.agent.agentId]);
    for (const [i, { s }] of [a, b].entries()) {
      expect(await nextDeploy(s)).toMatchObject({ jobId: bound[i]!.activeJobId, startWithinMs: 2_000 });
    }

    // One device: it starts within a second at one a second, so at once.
    const [single] = await bindDevices(t.owner, t.orgId, app.id, [c.agent.agentId]);
    const event = await nextDeploy(c.s);
    expect(event.jobId).toBe(single!.activeJobId);
    expect(event).not.toHaveProperty('startWithinMs');
  });
});
