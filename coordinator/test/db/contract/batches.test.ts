import { beforeEach, describe, expect, it } from 'vitest';
import type { BatchAdmissionRequest } from '../../../src/domain/model/batches.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { orgWithAgent } from './fixture.js';

const NOW = Date.UTC(2030, 0, 1, 10, 0, 0);
const none = { perMinute: null, perHour: null, perDay: null };
const databases = databasesOfThisFile();

describe.each(DATABASES)('batches (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, new Date(NOW).toISOString()));
  });

  /** A batch of one job on the organization's agent, called through `triggerId`; its number. */
  const admit = async (owner: { orgId: string; agentId: string }, triggerId: string): Promise<number> => {
    const createdAt = new Date(NOW).toISOString();
    const batchId = newId();
    const request: BatchAdmissionRequest = {
      batch: {
        id: batchId,
        orgId: owner.orgId,
        triggerId,
        workflowName: 'rotate',
        selector: 'role=gateway',
        maxParallel: null,
        source: 'webhook',
        apiTokenId: null,
        userId: null,
        createdAt,
      },
      jobs: [
        {
          job: {
            id: newId(),
            orgId: owner.orgId,
            kind: 'trigger',
            source: 'webhook',
            triggerId,
            agentId: owner.agentId,
            workflowId: null,
            workflowName: 'rotate',
            ref: null,
            debug: false,
            params: {},
            forced: false,
            forceReason: null,
            apiTokenId: null,
            userId: null,
            timeoutMs: null,
            createdAt,
          },
          rejection: null,
          workflowLimits: none,
        },
      ],
      now: NOW,
      idempotency: null,
      token: null,
    };
    const outcome = await t.repos.batches.admit(request);
    if (outcome.outcome !== 'admitted') throw new Error(`admit: ${outcome.outcome}`);
    return outcome.batch.number;
  };
  const numbers = (batches: { number: number }[]) => batches.map((b) => b.number);

  it("lists one trigger's batches newest first, a page at a time, and none of another organization's trigger", async () => {
    const [rotate, reboot] = [newId(), newId()];
    for (const trigger of [rotate, reboot, rotate, reboot, rotate]) await admit({ orgId, agentId }, trigger);
    const other = await orgWithAgent(t.repos, new Date(NOW).toISOString());
    const foreign = newId();
    await admit(other, foreign);

    const list = (q: { triggerId?: string; limit: number; beforeNumber?: number }) =>
      t.repos.batches.listByOrg(orgId, q);
    expect(numbers(await list({ limit: 10 }))).toEqual([5, 4, 3, 2, 1]);
    const first = await list({ triggerId: rotate, limit: 2 });
    expect(numbers(first)).toEqual([5, 3]);
    expect(first.every((b) => b.triggerId === rotate && b.counts.pending === 1)).toBe(true);
    expect(numbers(await list({ triggerId: rotate, limit: 2, beforeNumber: 3 }))).toEqual([1]);
    expect(numbers(await list({ triggerId: reboot, limit: 10 }))).toEqual([4, 2]);
    expect(await list({ triggerId: foreign, limit: 10 })).toEqual([]);
    expect(await list({ triggerId: newId(), limit: 10 })).toEqual([]);
    expect(numbers(await t.repos.batches.listByOrg(other.orgId, { triggerId: foreign, limit: 10 }))).toEqual([1]);
  });
});
