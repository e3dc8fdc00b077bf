import { describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import { AppError } from '../../../src/errors.js';
import {
  checkTriggerGranted,
  requireTriggerGrant,
  resolveRunRequest,
  type TriggerRunBody,
} from '../../../src/domain/trigger-run/request.js';
import { triggerRow } from '../../db/fixture.js';

const trigger = triggerRow({
  id: 't1',
  orgId: 'o1',
  name: 'deploy',
  agentId: 'a1',
  scopeType: 'workflow',
  workflowName: 'deploy',
});
type Issuer = { forceDenied: string | null; runsTypes: readonly Trigger['type'][] | null };
const owner: Issuer = { forceDenied: null, runsTypes: ['webhook'] };
const member: Issuer = {
  forceDenied: "A forced run needs the owner role; the API token's issuer is not an owner",
  runsTypes: ['webhook'],
};

const resolve = (body: TriggerRunBody, over: Partial<Trigger> = {}, token: Issuer = owner, agentRevoked = false) =>
  resolveRunRequest({ trigger: { ...trigger, ...over }, agentRevoked }, body, token);

/** The AppError `fn` throws. */
function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected an error');
}

describe('trigger grants', () => {
  it('refuses a token without a trigger grant', () => {
    expect(
      refusal(() => requireTriggerGrant({ scopes: [{ type: 'agent', agentIds: ['a1'] }], issuerRole: 'member' })).code,
    ).toBe('forbidden');
    expect(requireTriggerGrant({ scopes: [{ type: 'trigger', triggerIds: ['t1'] }], issuerRole: 'member' })).toEqual([
      't1',
    ]);
  });

  it('refuses any run by a token whose issuer is a viewer, whatever its grant', () => {
    const grant = { scopes: [{ type: 'trigger' as const, triggerIds: ['t1'] }] };
    expect(requireTriggerGrant({ ...grant, issuerRole: 'operator' })).toEqual(['t1']);
    expect(refusal(() => requireTriggerGrant({ ...grant, issuerRole: 'viewer' })).message).toBe(
      "The API token's issuer is a viewer of the organization: its tokens run no triggers",
    );
  });

  it('refuses a trigger the grant does not list', () => {
    expect(() => checkTriggerGranted(['t1'], 't1')).not.toThrow();
    expect(refusal(() => checkTriggerGranted(['t1'], 't2')).code).toBe('forbidden');
  });
});

describe('resolveRunRequest', () => {
  it("runs the trigger's own workflow and ignores workflowName for a workflow-scoped trigger", () => {
    expect(resolve({ workflowName: 'other', ref: 'main' })).toEqual({
      workflowName: 'deploy',
      ref: 'main',
      debug: false,
      forced: false,
      forceReason: null,
    });
  });

  it('refuses a cron or chat trigger with 403 to an actor that runs webhook triggers only', () => {
    const refused = refusal(() => resolve({}, { type: 'cron' }));
    expect(refused.code).toBe('forbidden');
    expect(refused.message).toBe(
      'Trigger `deploy` is a cron trigger; only webhook triggers can be run through the API',
    );
    expect(refusal(() => resolve({}, { type: 'slack' })).message).toContain('webhook');
  });

  it('runs a trigger of any type for an actor that may run them all (a member, by hand)', () => {
    const byHand: Issuer = { forceDenied: null, runsTypes: null };
    for (const type of ['webhook', 'cron', 'slack', 'discord'] as const) {
      expect(resolve({}, { type }, byHand).workflowName).toBe('deploy');
    }
  });

  it('refuses a ref outside allowedRefs with 403 and a missing one with 422', () => {
    const over = { allowedRefs: ['main'] };
    expect(resolve({ ref: 'main' }, over).ref).toBe('main');
    expect(refusal(() => resolve({ ref: 'dev' }, over)).code).toBe('forbidden');
    expect(refusal(() => resolve({}, over)).details).toEqual([
      { path: 'ref', message: expect.stringContaining('required') },
    ]);
  });

  it("refuses an empty ref and one longer than 255 characters, as the routes' schema does (a chat command passes none)", () => {
    expect(resolve({ ref: 'x'.repeat(255) }).ref).toHaveLength(255);
    // Counted by code point, as the schema counts: 255 emoji are 510 UTF-16 units.
    expect(resolve({ ref: '🚀'.repeat(255) }).ref).toBe('🚀'.repeat(255));
    const chat: Issuer = { forceDenied: 'A chat run is never forced', runsTypes: ['slack'] };
    expect(refusal(() => resolve({ ref: '' }, { type: 'slack' }, chat)).details).toEqual([
      { path: 'ref', message: 'must be at least 1 character long' },
    ]);
    expect(refusal(() => resolve({ ref: 'x'.repeat(256) }, { type: 'slack' }, chat)).details).toEqual([
      { path: 'ref', message: 'must be at most 255 characters long' },
    ]);
  });

  it('refuses debug without allowDebug with 403', () => {
    expect(refusal(() => resolve({ debug: true })).code).toBe('forbidden');
    expect(resolve({ debug: true }, { allowDebug: true }).debug).toBe(true);
    expect(resolve({ debug: false }).debug).toBe(false);
  });

  it('requires a valid workflowName for an agent-scoped trigger', () => {
    const over = { scopeType: 'agent' as const, workflowName: null };
    expect(resolve({ workflowName: 'lint' }, over).workflowName).toBe('lint');
    expect(refusal(() => resolve({}, over)).details).toEqual([
      { path: 'workflowName', message: expect.stringContaining('required') },
    ]);
    for (const bad of ['', '-x', 'a b', 'x'.repeat(129)]) {
      expect(refusal(() => resolve({ workflowName: bad }, over)).code).toBe('validation_failed');
    }
  });

  it("allows force only for an owner's token, with a reason", () => {
    expect(resolve({ force: true, forceReason: ' why ' })).toMatchObject({ forced: true, forceReason: 'why' });
    expect(refusal(() => resolve({ force: true, forceReason: 'why' }, {}, member)).code).toBe('forbidden');
    // Rights come before the missing reason.
    expect(refusal(() => resolve({ force: true }, {}, member)).code).toBe('forbidden');
    const missing = refusal(() => resolve({ force: true, forceReason: ' ' }));
    expect(missing.message).toBe('forceReason is required when force=true');
    expect(missing.details).toEqual([{ path: 'forceReason', message: 'forceReason is required when force=true' }]);
    // A reason without force forces nothing and is not kept.
    expect(resolve({ forceReason: 'why' })).toMatchObject({ forced: false, forceReason: null });
    expect(resolve({ force: false, forceReason: 'why' })).toMatchObject({ forced: false, forceReason: null });
  });

  it("answers 409 when the trigger's agent is revoked, after the rights checks", () => {
    expect(refusal(() => resolve({}, {}, owner, true)).code).toBe('conflict');
    expect(refusal(() => resolve({ debug: true }, {}, owner, true)).code).toBe('forbidden');
  });

  it('lists every invalid field at once', () => {
    const error = refusal(() =>
      resolve({ force: true }, { scopeType: 'agent', workflowName: null, allowedRefs: ['main'] }),
    );
    expect((error.details as { path: string }[]).map((d) => d.path)).toEqual(['ref', 'workflowName', 'forceReason']);
  });
});
