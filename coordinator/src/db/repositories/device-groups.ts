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
import { newTimeOrderedId } from '../../util/ids.js';
import { all, command, jsonRecords, lock, one, query, run, type Database, type Flow } from '../sql/index.js';
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
  application_id: string;
  agent_id: string;
  origin: BindingOrigin;
}

const toGroupAgent = (r: GroupAgentRow): GroupAgent => ({
  id: r.id,
  status: r.status,
  labels: mergeLabels(JSON.parse(r.reported_labels), JSON.parse(r.operator_labels)),
});

/** The organization's applications with a selector, in id order: the order their rows are locked in. */
const WITH_SELECTOR = query<ApplicationRow, [string]>(
  'SELECT * FROM applications WHERE org_id = ? AND device_selector IS NOT NULL AND deleted_at IS NULL ORDER BY id',
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
  'SELECT id, application_id, agent_id, origin FROM device_bindings WHERE application_id = ?',
);
/** The agents' bindings, to any application (an agent has few). */
const BINDINGS_OF_AGENTS = query<GroupBindingRow, [string]>(
  (d) => `SELECT id, application_id, agent_id, origin FROM device_bindings WHERE agent_id ${d.inJsonArray('?')}`,
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
 * (domain/ota/device-group-rule.ts). A pass takes the organization's device-group lock
 * (PostgreSQL; SQLite's single writer serializes): passes of one organization take turns across
 * coordinators, so the last one reads every label and selector committed before it and the groups
 * end as they say. An application whose bindings change has its row locked first, as binding
 * agents locks it (a manual bind waits, then finds the selector's binding: 409), and is read again
 * under the lock (one deleted meanwhile is left alone). A pass for a few agents reads the
 * applications, the agents and their bindings in three statements, and writes only where
 * something changes.
 */
export function createDeviceGroupRepository(db: Database, planDeviceGroup: PlanDeviceGroup): DeviceGroupRepository {
  function* pass(input: DeviceGroupPassInput): Flow<DeviceGroupChange[]> {
    yield* lock('device-groups', input.orgId);
    let apps: ApplicationRow[];
    if (input.applicationId === undefined) {
      apps = yield* all(WITH_SELECTOR, [input.orgId]);
    } else {
      const row = yield* one(APP, [input.orgId, input.applicationId]);
      if (!row) return [];
      if (input.setSelector) {
        yield* run(SET_SELECTOR, [input.setSelector.selector, row.id]);
        row.device_selector = input.setSelector.selector;
      }
      apps = [row];
    }
    if (apps.length === 0 || input.agentIds?.length === 0) return [];
    const agentList = input.agentIds === undefined ? null : JSON.stringify(input.agentIds);
    const agents = (
      agentList === null ? yield* all(AGENTS_OF_ORG, [input.orgId]) : yield* all(AGENTS, [input.orgId, agentList])
    ).map(toGroupAgent);
    const ofAgents = agentList === null ? null : yield* all(BINDINGS_OF_AGENTS, [agentList]);
    const changes: DeviceGroupChange[] = [];
    for (let app of apps) {
      const rows = ofAgents?.filter((b) => b.application_id === app.id) ?? (yield* all(BINDINGS_OF_APP, [app.id]));
      const bindings = rows.map((b) => ({ id: b.id, agentId: b.agent_id, origin: b.origin }));
      const plan = planDeviceGroup({ selector: app.device_selector, agents, bindings });
      if (plan.bind.length === 0 && plan.unbind.length === 0) {
        changes.push({ application: toApplication(app), matching: plan.matching, bound: [], unbound: [] });
        continue;
      }
      if (input.applicationId === undefined) {
        const locked = yield* one(APP, [input.orgId, app.id]);
        if (!locked) continue;
        app = locked;
      }
      const unbound =
        plan.unbind.length === 0
          ? []
          : yield* removeBindings(
              yield* all(SELECTOR_BINDINGS, [app.id, JSON.stringify(plan.unbind)]),
              input.at,
              input.cancelMessage,
            );
      let bound: DeviceGroupChange['bound'] = [];
      if (plan.bind.length > 0) {
        const { id: applicationId, default_channel: channel } = app;
        const records = plan.bind.map((agentId, i) => ({
          ord: i + 1,
          id: newTimeOrderedId(Date.parse(input.at)),
          org_id: input.orgId,
          application_id: applicationId,
          agent_id: agentId,
          channel,
          created_at: input.at,
        }));
        const order = new Map(plan.bind.map((agentId, i) => [agentId, i]));
        bound = (yield* all(INSERT, [jsonRecords(NEW_BINDING, records)]))
          .map(toDeviceBinding)
          .sort((x, y) => order.get(x.agentId)! - order.get(y.agentId)!);
      }
      changes.push({ application: toApplication(app), matching: plan.matching, bound, unbound });
    }
    return changes;
  }

  return {
    pass(input) {
      return db.transaction(() => pass(input), { immediate: true });
    },
  };
}
