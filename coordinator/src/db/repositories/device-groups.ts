import { mergeLabels } from '@drover/shared';
import type { AgentStatus } from '../../domain/model/agents.js';
import type { BindingOrigin } from '../../domain/model/device-bindings.js';
import type {
  DeviceGroupChange,
  DeviceGroupPassInput,
  DeviceGroupRepository,
  GroupAgent,
  PlanDeviceGroup,
} from '../../domain/model/device-groups.js';
import { newId } from '../../util/ids.js';
import { all, command, jsonRecords, lock, one, query, run, values, type Database, type Flow } from '../sql/index.js';
import { toApplication, type ApplicationRow } from './applications.js';
import { toDeviceBinding, type DeviceBindingRow } from './device-binding-rows.js';
import { removeBindings } from './device-bindings.js';

interface GroupAgentRow {
  id: string;
  status: AgentStatus;
  reported_labels: string;
  operator_labels: string;
}
interface GroupBindingRow {
  id: string;
  agent_id: string;
  origin: BindingOrigin;
}

const toGroupAgent = (r: GroupAgentRow): GroupAgent => ({
  id: r.id,
  status: r.status,
  labels: mergeLabels(JSON.parse(r.reported_labels), JSON.parse(r.operator_labels)),
});

/** The organization's applications with a selector, in id order: the order their rows are locked in. */
const WITH_SELECTOR = values<string, [string]>(
  'SELECT id FROM applications WHERE org_id = ? AND device_selector IS NOT NULL AND deleted_at IS NULL ORDER BY id',
);
/** The application's row, locked (PostgreSQL) as binding agents locks it (parent-locks.ts): they take turns. */
const APP = query<ApplicationRow, [string, string]>(
  (d) => `SELECT * FROM applications WHERE org_id = ? AND id = ? AND deleted_at IS NULL ${d.forNoKeyUpdate}`,
);
const SET_SELECTOR = command<[string | null, string]>('UPDATE applications SET device_selector = ? WHERE id = ?');
const AGENT_COLUMNS = 'id, status, reported_labels, operator_labels';
const AGENTS_OF_ORG = query<GroupAgentRow, [string]>(
  `SELECT ${AGENT_COLUMNS} FROM agents WHERE org_id = ? ORDER BY seq`,
);
const AGENTS = query<GroupAgentRow, [string, string]>(
  (d) => `SELECT ${AGENT_COLUMNS} FROM agents WHERE org_id = ? AND id ${d.inJsonArray('?')} ORDER BY seq`,
);
const BINDINGS_OF_APP = query<GroupBindingRow, [string]>(
  'SELECT id, agent_id, origin FROM device_bindings WHERE application_id = ?',
);
const BINDINGS_OF_AGENTS = query<GroupBindingRow, [string, string]>(
  (d) => `SELECT id, agent_id, origin FROM device_bindings WHERE application_id = ? AND agent_id ${d.inJsonArray('?')}`,
);
/** The selector's bindings to remove, locked (PostgreSQL) in id order, as an evaluation locks bindings. */
const SELECTOR_BINDINGS = query<DeviceBindingRow, [string, string]>(
  (d) => `SELECT * FROM device_bindings WHERE application_id = ? AND origin = 'selector' AND id ${d.inJsonArray('?')}
   ORDER BY id ${d.forUpdate}`,
);
const NEW_BINDING = {
  ord: 'bigint',
  id: 'text',
  org_id: 'text',
  application_id: 'text',
  agent_id: 'text',
  channel: 'text',
  created_at: 'timestamptz',
};
/**
 * The selector's new bindings (`?`, records of NEW_BINDING), in their order (the bind order); an
 * agent bound meanwhile keeps its binding (the unique application and agent) and is not returned.
 */
const INSERT = query<DeviceBindingRow, [string]>(
  (d) => `INSERT INTO device_bindings (id, org_id, application_id, agent_id, channel, origin, created_at)
   SELECT t.id, t.org_id, t.application_id, t.agent_id, t.channel, 'selector', t.created_at
   FROM ${d.jsonRecords('?', 't', NEW_BINDING)} WHERE TRUE ORDER BY t.ord
   ON CONFLICT (application_id, agent_id) DO NOTHING RETURNING *`,
);

/**
 * Device groups (docs/ota.md, "Device groups"). `planDeviceGroup` is the domain's rule
 * (domain/ota/device-groups.ts). A pass takes the organization's device-group lock (PostgreSQL;
 * SQLite's single writer serializes): passes of one organization take turns across coordinators,
 * so the last one reads every label and selector committed before it and the groups end as they
 * say. Each application's row is locked as binding agents locks it.
 */
export function createDeviceGroupRepository(db: Database, planDeviceGroup: PlanDeviceGroup): DeviceGroupRepository {
  function* pass(input: DeviceGroupPassInput): Flow<DeviceGroupChange[]> {
    yield* lock('device-groups', input.orgId);
    const appIds = input.applicationId === undefined ? yield* all(WITH_SELECTOR, [input.orgId]) : [input.applicationId];
    if (appIds.length === 0 || input.agentIds?.length === 0) return [];
    const agentList = input.agentIds === undefined ? null : JSON.stringify(input.agentIds);
    const agentRows =
      agentList === null ? yield* all(AGENTS_OF_ORG, [input.orgId]) : yield* all(AGENTS, [input.orgId, agentList]);
    const agents = agentRows.map(toGroupAgent);
    const changes: DeviceGroupChange[] = [];
    for (const appId of appIds) {
      let row = yield* one(APP, [input.orgId, appId]);
      if (!row) continue;
      if (input.setSelector) {
        yield* run(SET_SELECTOR, [input.setSelector.selector, appId]);
        row = { ...row, device_selector: input.setSelector.selector };
      }
      const bindings = (
        agentList === null ? yield* all(BINDINGS_OF_APP, [appId]) : yield* all(BINDINGS_OF_AGENTS, [appId, agentList])
      ).map((b) => ({ id: b.id, agentId: b.agent_id, origin: b.origin }));
      const plan = planDeviceGroup({ selector: row.device_selector, agents, bindings });
      const unbound =
        plan.unbind.length === 0
          ? []
          : yield* removeBindings(
              yield* all(SELECTOR_BINDINGS, [appId, JSON.stringify(plan.unbind)]),
              input.at,
              input.cancelMessage,
            );
      let bound: DeviceGroupChange['bound'] = [];
      if (plan.bind.length > 0) {
        const records = plan.bind.map((agentId, i) => ({
          ord: i + 1,
          id: newId(),
          org_id: input.orgId,
          application_id: appId,
          agent_id: agentId,
          channel: row.default_channel,
          created_at: input.at,
        }));
        const order = new Map(plan.bind.map((agentId, i) => [agentId, i]));
        bound = (yield* all(INSERT, [jsonRecords(NEW_BINDING, records)]))
          .map(toDeviceBinding)
          .sort((x, y) => order.get(x.agentId)! - order.get(y.agentId)!);
      }
      changes.push({ application: toApplication(row), matching: plan.matching, bound, unbound });
    }
    return changes;
  }

  return {
    pass(input) {
      return db.transaction(() => pass(input), { immediate: true });
    },
  };
}
