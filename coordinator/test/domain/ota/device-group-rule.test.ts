import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { deviceSelectorFrom, inDeviceGroup, planDeviceGroup } from '../../../src/domain/ota/device-group-rule.js';
import type { GroupAgent, GroupBinding } from '../../../src/domain/model/device-groups.js';

const agent = (id: string, labels: Record<string, string>, status: GroupAgent['status'] = 'connected'): GroupAgent => ({
  id,
  status,
  labels,
});
const binding = (agentId: string, origin: GroupBinding['origin']): GroupBinding => ({
  id: `b-${agentId}`,
  agentId,
  origin,
});

const kiosk = agent('kiosk', { role: 'kiosk' });
const kiosk2 = agent('kiosk2', { role: 'kiosk', site: 'berlin' }, 'pending');
const gateway = agent('gateway', { role: 'gateway' });
const revoked = agent('revoked', { role: 'kiosk' }, 'revoked');

describe('the device group rule (docs/ota.md, "Device groups")', () => {
  it('binds every matching agent not bound yet, in the order read, revoked ones aside', () => {
    const plan = planDeviceGroup({
      selector: 'role=kiosk',
      agents: [kiosk2, gateway, revoked, kiosk],
      bindings: [],
    });
    expect(plan).toEqual({ matching: 2, bind: ['kiosk2', 'kiosk'], unbind: [] });
  });

  it('does not bind an agent bound already, by hand or by the selector', () => {
    const plan = planDeviceGroup({
      selector: 'role=kiosk',
      agents: [kiosk, kiosk2],
      bindings: [binding('kiosk', 'manual'), binding('kiosk2', 'selector')],
    });
    expect(plan).toEqual({ matching: 2, bind: [], unbind: [] });
  });

  it('removes the selector’s bindings whose agent stopped matching, never a manual one', () => {
    const plan = planDeviceGroup({
      selector: 'role=kiosk,site=berlin',
      agents: [kiosk, kiosk2, gateway],
      bindings: [binding('kiosk', 'selector'), binding('kiosk2', 'selector'), binding('gateway', 'manual')],
    });
    expect(plan).toEqual({ matching: 1, bind: [], unbind: ['b-kiosk'] });
  });

  it('keeps the binding of a revoked agent that still matches, as revocation keeps bindings', () => {
    const plan = planDeviceGroup({
      selector: 'role=kiosk',
      agents: [revoked],
      bindings: [binding('revoked', 'selector')],
    });
    expect(plan).toEqual({ matching: 0, bind: [], unbind: [] });
  });

  it('without a selector, binds nothing and removes every binding the selector made', () => {
    const plan = planDeviceGroup({
      selector: null,
      agents: [kiosk, gateway],
      bindings: [binding('kiosk', 'selector'), binding('gateway', 'manual')],
    });
    expect(plan).toEqual({ matching: 0, bind: [], unbind: ['b-kiosk'] });
  });

  it('says when a selector matches nothing', () => {
    expect(planDeviceGroup({ selector: 'role=printer', agents: [kiosk, gateway], bindings: [] })).toEqual({
      matching: 0,
      bind: [],
      unbind: [],
    });
  });

  it('tells whether labels belong to an application’s group', () => {
    expect(inDeviceGroup({ deviceSelector: 'role=kiosk' }, { role: 'kiosk' })).toBe(true);
    expect(inDeviceGroup({ deviceSelector: 'role=kiosk' }, { role: 'gateway' })).toBe(false);
    expect(inDeviceGroup({ deviceSelector: null }, { role: 'kiosk' })).toBe(false);
  });
});

describe('a device selector from a request', () => {
  const refusal = (source: string, path = 'body.deviceSelector', nullRemoves = true) => {
    try {
      deviceSelectorFrom(source, path, nullRemoves);
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      return (error as AppError).details;
    }
    throw new Error(`accepted ${source}`);
  };

  it('keeps the canonical form, and null', () => {
    expect(deviceSelectorFrom(' role = kiosk , site in (munich, berlin) ', 'body.deviceSelector')).toBe(
      'role=kiosk,site in (munich,berlin)',
    );
    expect(deviceSelectorFrom(null, 'body.deviceSelector')).toBeNull();
  });

  it('refuses one that does not parse, naming the field and the position', () => {
    expect(refusal('role in kiosk')).toEqual([
      { path: 'body.deviceSelector', message: "is not a label selector: at position 8: expected '(', found 'kiosk'" },
    ]);
  });

  it('refuses the empty selector, as a trigger’s agentSelector is refused', () => {
    expect(refusal('   ')).toEqual([
      {
        path: 'body.deviceSelector',
        message:
          'must select by at least one label (to bind every agent, select one they all have, such as `os`); send null to remove the device group',
      },
    ]);
  });

  it('does not tell a preview to send null, which a query string cannot', () => {
    expect(refusal(' ', 'querystring.selector', false)).toEqual([
      {
        path: 'querystring.selector',
        message: 'must select by at least one label (to bind every agent, select one they all have, such as `os`)',
      },
    ]);
  });
});
