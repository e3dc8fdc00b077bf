import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/domain/model/agents.js';
import type { StorageBinding } from '../../../src/domain/model/storage-bindings.js';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import { AppError } from '../../../src/errors.js';
import { checkGrantTargets, parseScopes, type GrantInput, type OrgTargets } from '../../../src/domain/tokens/scopes.js';

const A1 = '11111111-1111-4111-8111-111111111111';
const A2 = '22222222-2222-4222-8222-222222222222';
const T1 = '33333333-3333-4333-8333-333333333333';
const T2 = '55555555-5555-4555-8555-555555555555';
const T3 = '66666666-6666-4666-8666-666666666666';
const B1 = '44444444-4444-4444-8444-444444444444';
const FOREIGN = '99999999-9999-4999-8999-999999999999';

async function details(fn: () => unknown): Promise<{ path: string; message: string }[]> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('validation_failed');
    return (error as AppError).details as { path: string; message: string }[];
  }
  throw new Error('expected a validation failure');
}

describe('token scopes', () => {
  it('accepts one grant of each type in canonical form', () => {
    expect(
      parseScopes([
        { type: 'storage', bindingIds: null, permissions: ['delete', 'read'] },
        { type: 'agent', agentIds: [A1, A2] },
        { type: 'trigger', triggerIds: [T1] },
      ]),
    ).toEqual([
      { type: 'storage', bindingIds: null, permissions: ['read', 'delete'] },
      { type: 'agent', agentIds: [A1, A2] },
      { type: 'trigger', triggerIds: [T1] },
    ]);
  });

  it('accepts an empty scope list (a token that can only read its own metadata)', () => {
    expect(parseScopes([])).toEqual([]);
  });

  it('refuses a grant type given twice', async () => {
    const d = await details(() =>
      parseScopes([
        { type: 'agent', agentIds: [A1] },
        { type: 'agent', agentIds: [A2] },
      ]),
    );
    expect(d).toEqual([{ path: 'body.scopes.1.type', message: expect.stringContaining('at most one "agent" grant') }]);
  });

  it('refuses an unknown grant type', async () => {
    const d = await details(() => parseScopes([{ type: 'admin' } as unknown as GrantInput]));
    expect(d.map((p) => p.path)).toEqual(['body.scopes.0.type']);
  });

  it('requires the fields of each grant type', async () => {
    const d = await details(() => parseScopes([{ type: 'agent' }, { type: 'trigger' }, { type: 'storage' }]));
    expect(d.map((p) => p.path)).toEqual([
      'body.scopes.0.agentIds',
      'body.scopes.1.triggerIds',
      'body.scopes.2.bindingIds',
      'body.scopes.2.permissions',
    ]);
  });

  it('refuses the fields of another grant type', async () => {
    const d = await details(() =>
      parseScopes([
        { type: 'agent', agentIds: [A1], triggerIds: [T1] },
        { type: 'storage', bindingIds: null, permissions: ['read'], agentIds: [A1] },
      ]),
    );
    expect(d.map((p) => p.path)).toEqual(['body.scopes.0.triggerIds', 'body.scopes.1.agentIds']);
  });

  it('refuses empty id lists and empty permissions', async () => {
    const d = await details(() =>
      parseScopes([
        { type: 'agent', agentIds: [] },
        { type: 'trigger', triggerIds: [] },
        { type: 'storage', bindingIds: [], permissions: [] },
      ]),
    );
    expect(d.map((p) => p.path)).toEqual([
      'body.scopes.0.agentIds',
      'body.scopes.1.triggerIds',
      'body.scopes.2.bindingIds',
      'body.scopes.2.permissions',
    ]);
  });

  it('refuses duplicate ids and permissions, naming the repeated item', async () => {
    const d = await details(() =>
      parseScopes([
        { type: 'agent', agentIds: [A1, A2, A1] },
        { type: 'storage', bindingIds: [B1], permissions: ['read', 'read'] },
      ]),
    );
    expect(d.map((p) => p.path)).toEqual(['body.scopes.0.agentIds.2', 'body.scopes.1.permissions.1']);
  });
});

describe('grant targets', () => {
  const targets: OrgTargets = {
    agents: async (ids) =>
      [
        { id: A1, status: 'connected' },
        { id: A2, status: 'revoked' },
      ].filter((a) => ids.includes(a.id)) as Agent[],
    triggers: async (ids) =>
      [
        { id: T1, type: 'webhook', name: 'deploy' },
        { id: T2, type: 'cron', name: 'nightly' },
        { id: T3, type: 'slack', name: 'chat' },
      ].filter((t) => ids.includes(t.id)) as Trigger[],
    bindings: async () => [{ id: B1 }] as StorageBinding[],
  };

  it('accepts ids of the organization and storage grants over every binding', async () => {
    await expect(
      checkGrantTargets(
        [
          { type: 'agent', agentIds: [A1] },
          { type: 'trigger', triggerIds: [T1] },
          { type: 'storage', bindingIds: [B1], permissions: ['read'] },
        ],
        targets,
      ),
    ).resolves.toBeUndefined();
    await expect(
      checkGrantTargets([{ type: 'storage', bindingIds: null, permissions: ['write'] }], targets),
    ).resolves.toBeUndefined();
  });

  it('names every id outside the organization, and revoked agents', async () => {
    const d = await details(() =>
      checkGrantTargets(
        [
          { type: 'agent', agentIds: [A1, FOREIGN, A2] },
          { type: 'trigger', triggerIds: [FOREIGN] },
          { type: 'storage', bindingIds: [B1, FOREIGN], permissions: ['read'] },
        ],
        targets,
      ),
    );
    expect(d.map((p) => p.path)).toEqual([
      'body.scopes.0.agentIds.1',
      'body.scopes.0.agentIds.2',
      'body.scopes.1.triggerIds.0',
      'body.scopes.2.bindingIds.1',
    ]);
    expect(d[0]!.message).toContain(FOREIGN);
  });

  it('refuses to grant runs of cron and chat triggers, which a token cannot run', async () => {
    const d = await details(() => checkGrantTargets([{ type: 'trigger', triggerIds: [T1, T2, T3] }], targets));
    expect(d).toEqual([
      {
        path: 'body.scopes.0.triggerIds.1',
        message: `\`${T2}\` is the cron trigger \`nightly\`; an API token runs only webhook triggers`,
      },
      {
        path: 'body.scopes.0.triggerIds.2',
        message: `\`${T3}\` is the slack trigger \`chat\`; an API token runs only webhook triggers`,
      },
    ]);
  });
});
