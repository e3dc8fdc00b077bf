import type { Repositories } from '../model/repositories.js';
import type { Trigger } from '../model/triggers.js';
import { notFound } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { userAction, type AuditLog, type UserActor } from '../audit-log.js';
import {
  changedFields,
  checkChatKeywordClash,
  checkTriggerAgent,
  resolveTriggerConfig,
  type TriggerConfig,
  type TriggerInput,
} from '../triggers.js';

/**
 * Triggers of an organization (docs/management.md, "Triggers"): the management API's one way to
 * create, change and delete them, with their audit entries. Who may call what (a member; an
 * owner to delete) is the caller's to check.
 */
export class TriggerService {
  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'triggers' | 'agents'>;
      audit: AuditLog;
      clock: Clock;
    },
  ) {}

  list(actor: UserActor): Promise<Trigger[]> {
    return this.deps.repos.triggers.listByOrg(actor.orgId);
  }

  async get(actor: UserActor, triggerId: string): Promise<Trigger> {
    const trigger = await this.deps.repos.triggers.findInOrg(actor.orgId, triggerId);
    if (!trigger) throw notFound('Trigger');
    return trigger;
  }

  async create(actor: UserActor, input: TriggerInput): Promise<Trigger> {
    const { repos, audit, clock } = this.deps;
    const config = resolveTriggerConfig(input, null);
    await this.checkConfig(actor.orgId, config, null, true);
    const now = isoNow(clock);
    const trigger: Trigger = {
      id: newId(),
      orgId: actor.orgId,
      ...config,
      createdBy: actor.userId,
      createdAt: now,
      updatedAt: now,
    };
    await repos.triggers.insert(trigger);
    await audit.record(
      userAction(actor, 'trigger.create', 'trigger', trigger.id, {
        name: trigger.name,
        type: trigger.type,
        agentId: trigger.agentId,
        scopeType: trigger.scopeType,
        workflowName: trigger.workflowName,
      }),
    );
    return trigger;
  }

  /** Changes any subset of the configuration; the result is validated as a whole. */
  async update(actor: UserActor, triggerId: string, input: TriggerInput): Promise<Trigger> {
    const { repos, audit, clock } = this.deps;
    const current = await this.get(actor, triggerId);
    const config = resolveTriggerConfig(input, current);
    const changed = changedFields(current, config);
    if (changed.length === 0) return current;
    // A trigger whose agent was revoked can still be edited; pointing it at an agent is checked.
    await this.checkConfig(actor.orgId, config, current.id, input.agentId !== undefined);
    const updated: Trigger = { ...current, ...config, updatedAt: isoNow(clock) };
    await repos.triggers.update(updated);
    await audit.record(userAction(actor, 'trigger.update', 'trigger', updated.id, { name: updated.name, changed }));
    return updated;
  }

  /** Deletes a trigger (it is never found again) and answers it as it was. */
  async remove(actor: UserActor, triggerId: string): Promise<Trigger> {
    const { repos, audit, clock } = this.deps;
    const trigger = await repos.triggers.findInOrg(actor.orgId, triggerId);
    if (!trigger || !(await repos.triggers.softDelete(actor.orgId, trigger.id, isoNow(clock)))) {
      throw notFound('Trigger');
    }
    await audit.record(
      userAction(actor, 'trigger.delete', 'trigger', trigger.id, { name: trigger.name, type: trigger.type }),
    );
    return trigger;
  }

  private async checkConfig(orgId: string, config: TriggerConfig, selfId: string | null, agentChanged: boolean) {
    const { repos } = this.deps;
    if (agentChanged) checkTriggerAgent(config.agentId, await repos.agents.findInOrg(orgId, config.agentId));
    if (config.chatKeyword !== null) checkChatKeywordClash(config, await repos.triggers.listByOrg(orgId), selfId);
  }
}
