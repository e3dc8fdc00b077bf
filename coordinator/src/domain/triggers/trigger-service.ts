import type { Repositories } from '../model/repositories.js';
import type { CronOccurrence } from '../model/cron-occurrences.js';
import type { Trigger, TriggerLimits, TriggerType } from '../model/triggers.js';
import { AppError, conflict, notFound, placeValidation } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { nameSearch } from '../../util/name-search.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import {
  changedFields,
  checkChatKeywordClash,
  checkTriggerAgent,
  resolveTriggerConfig,
  type TriggerConfig,
  type TriggerInput,
} from './triggers.js';
import { CronSchedules } from '../cron/schedule.js';
import { triggerView, type TriggerView } from '../cron/trigger-view.js';
import { resolveRunParams } from '../trigger-run/params.js';
import { triggerLimitReached } from './trigger-limits.js';

/** What the triggers list of an organization is narrowed to (docs/management.md, "Triggers"). */
export interface TriggerListFilter {
  type?: TriggerType;
  /** Text the trigger's name holds, in any case. */
  text?: string;
  /** Only the triggers of these ids: those a page names (read by id, not among every trigger). */
  ids?: readonly string[];
  /** The page's cursor: triggers created after this position (instant, then insertion key). */
  after?: TriggerListPosition;
  /** At most this many triggers; none: every one that matches. */
  limit?: number;
}

/** Where a trigger stands in the list: created at, then its insertion key (several in one instant). */
export interface TriggerListPosition {
  createdAt: string;
  key: number;
}

export interface TriggerListPage {
  /** The page's triggers, oldest first. */
  triggers: TriggerView[];
  /** How many triggers match the filter, on every page. */
  matching: number;
  /** The position of the page's last trigger when more match after it, else null. */
  next: TriggerListPosition | null;
}

/** The fields a cron trigger's fixed params are checked against, with the params themselves. */
const PARAMS_CONTEXT: ReadonlySet<string> = new Set(['params', 'workflowName', 'agentId', 'type']);

/** How many times a change without `If-Match` is made again onto a trigger others changed meanwhile. */
const UPDATE_ATTEMPTS = 5;

/** `now`, or just after `previous` when this clock is not past it: a trigger's versions only grow. */
function laterThan(now: string, previous: string): string {
  const last = Date.parse(previous);
  return Date.parse(now) > last ? now : new Date(last + 1).toISOString();
}

/** The 412 of a change made from a trigger that was changed since (`If-Match`). */
function changedSince(current: Trigger): AppError {
  return new AppError(
    'precondition_failed',
    `The trigger was changed at ${current.updatedAt}, after the version this change was made from: read it again`,
    { details: { updatedAt: current.updatedAt } },
  );
}

/** Largest page of `occurrences`. */
export const OCCURRENCES_MAX_LIMIT = 200;

/**
 * Triggers of an organization (docs/management.md, "Triggers"): the management API's one way to
 * create, change and delete them, with their audit entries. Who may call what (a member; an
 * owner to delete) is the caller's to check.
 */
export class TriggerService {
  private readonly schedules: CronSchedules;
  private readonly changed: (triggerId: string) => void;

  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'triggers' | 'agents' | 'workflows' | 'cronOccurrences'>;
      audit: AuditLog;
      clock: Clock;
      /** The most triggers, and enabled cron triggers, an organization may have (409 past them). */
      limits: TriggerLimits;
      /** Told after every create, change and delete (the cron scheduler re-reads the trigger). */
      onChanged?: (triggerId: string) => void;
      /**
       * Cancels the jobs waiting in the trigger's pool, and says how many: told when a change
       * takes the trigger off its selector, after which no agent could ever take them.
       */
      cancelPoolJobs?: (orgId: string, triggerId: string) => Promise<number>;
      schedules?: CronSchedules;
    },
  ) {
    this.schedules = deps.schedules ?? new CronSchedules();
    this.changed = deps.onChanged ?? (() => undefined);
  }

  /**
   * A page of the organization's triggers that match the filter, oldest first. The filter is
   * matched on the organization's triggers as read (a thousand are read in a few milliseconds);
   * only the page's are made views (a cron trigger's next runs and last occurrences), where the
   * dashboard had every trigger's every few seconds before.
   */
  async list(actor: UserActor, filter: TriggerListFilter = {}): Promise<TriggerListPage> {
    const { triggers } = this.deps.repos;
    const named = nameSearch(filter.text);
    const matches = (t: Trigger) => (filter.type === undefined || t.type === filter.type) && (!named || named(t.name));
    const read =
      filter.ids === undefined
        ? await triggers.listByOrg(actor.orgId)
        : await triggers.listByIds(actor.orgId, filter.ids);
    const all = read.filter(matches);
    const { after, limit } = filter;
    const rest =
      after === undefined
        ? all
        : all.filter(
            (t) => t.createdAt > after.createdAt || (t.createdAt === after.createdAt && t.listKey > after.key),
          );
    const page = limit === undefined ? rest : rest.slice(0, limit);
    const last = page[page.length - 1];
    return {
      triggers: await Promise.all(page.map(({ listKey: _, ...t }) => this.view(t))),
      matching: all.length,
      next: page.length < rest.length && last ? { createdAt: last.createdAt, key: last.listKey } : null,
    };
  }

  async get(actor: UserActor, triggerId: string): Promise<TriggerView> {
    return this.view(await this.find(actor, triggerId));
  }

  /** The trigger's occurrence records, newest first; `before`: those scheduled before this instant. */
  async occurrences(
    actor: UserActor,
    triggerId: string,
    page: { limit: number; before?: string | undefined },
  ): Promise<CronOccurrence[]> {
    const trigger = await this.find(actor, triggerId);
    return this.deps.repos.cronOccurrences.list(trigger.id, page);
  }

  async create(actor: UserActor, input: TriggerInput): Promise<TriggerView> {
    const { repos, audit, clock } = this.deps;
    const config = resolveTriggerConfig(input, null);
    await this.checkConfig(actor.orgId, config, null, true);
    const now = isoNow(clock);
    const trigger: Trigger = {
      id: newId(),
      orgId: actor.orgId,
      ...config,
      cronSince: config.type === 'cron' ? now : null,
      createdBy: actor.userId,
      createdAt: now,
      updatedAt: now,
    };
    const refused = await repos.triggers.insert(trigger, this.deps.limits);
    if (refused) throw triggerLimitReached(refused, this.deps.limits);
    this.changed(trigger.id);
    await audit.record(
      userAction(actor, 'trigger.create', 'trigger', trigger.id, {
        name: trigger.name,
        type: trigger.type,
        agentId: trigger.agentId,
        // A trigger on a selector: which agents it may reach, and how its runs spread over them.
        ...(trigger.agentSelector !== null ? { agentSelector: trigger.agentSelector, fanout: trigger.fanout } : {}),
        scopeType: trigger.scopeType,
        workflowName: trigger.workflowName,
      }),
    );
    return this.view(trigger);
  }

  /**
   * Changes any subset of the configuration; the result is validated as a whole. `ifVersion`:
   * the `updatedAt` of the trigger the caller's change was made from (the `If-Match` of a PATCH):
   * a trigger changed since is refused with 412 and left as it is. Without it, a change made
   * alongside another is applied again onto the trigger as that one left it, field by field:
   * neither is lost.
   */
  async update(actor: UserActor, triggerId: string, input: TriggerInput, ifVersion?: string): Promise<TriggerView> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.find(actor, triggerId);
      if (ifVersion !== undefined && current.updatedAt !== ifVersion) throw changedSince(current);
      const written = await this.write(actor, current, input);
      if (written !== 'changed') return written;
      if (ifVersion !== undefined) throw changedSince(await this.find(actor, triggerId));
      if (attempt === UPDATE_ATTEMPTS) {
        throw conflict(
          'The trigger was changed by other requests at the same time, again and again: send the change again',
        );
      }
    }
  }

  /** Writes `input` onto `current`, unless the stored trigger is no longer `current`: then `changed`. */
  private async write(actor: UserActor, current: Trigger, input: TriggerInput): Promise<TriggerView | 'changed'> {
    const { repos, audit, clock } = this.deps;
    const config = resolveTriggerConfig(input, current);
    const changed = changedFields(current, config);
    if (changed.length === 0) return this.view(current);
    // A trigger whose agent was revoked can still be edited; pointing it at an agent is checked.
    // Its fixed params are checked when they, or what they are checked against, change, and when
    // it is enabled: a trigger whose workflow outgrew them can still be disabled or renamed (each
    // of its runs is refused meanwhile).
    const paramsAt =
      changed.some((field) => PARAMS_CONTEXT.has(field)) ||
      (changed.includes('cronEnabled') && config.cronEnabled === true);
    await this.checkConfig(actor.orgId, config, current.id, input.agentId !== undefined, paramsAt);
    // Its version (`If-Match`): later than the one it replaces, whatever this machine's clock says.
    const now = laterThan(isoNow(clock), current.updatedAt);
    // A new schedule owes no occurrence from before it; enabling again keeps the old one's debts.
    const newSchedule =
      config.type === 'cron' &&
      (current.type !== 'cron' ||
        current.cronExpression !== config.cronExpression ||
        current.cronTimezone !== config.cronTimezone);
    const cronSince = config.type !== 'cron' ? null : newSchedule ? now : current.cronSince;
    const updated: Trigger = { ...current, ...config, cronSince, updatedAt: now };
    const written = await repos.triggers.update(updated, this.deps.limits, current.updatedAt);
    if (written === 'changed') return written;
    if (written) throw triggerLimitReached(written, this.deps.limits);
    this.changed(updated.id);
    // Its pool is gone: the jobs waiting in it would wait for ever (docs/fleets.md, "Pools").
    const offPool = current.agentSelector !== null && updated.agentSelector === null;
    const cancelled = offPool ? ((await this.deps.cancelPoolJobs?.(actor.orgId, updated.id)) ?? 0) : 0;
    await audit.record(
      userAction(actor, 'trigger.update', 'trigger', updated.id, {
        name: updated.name,
        changed,
        ...(cancelled > 0 ? { cancelledWaiting: cancelled } : {}),
      }),
    );
    return this.view(updated);
  }

  /** Deletes a trigger (it is never found again) and answers it as it was. */
  async remove(actor: UserActor, triggerId: string): Promise<TriggerView> {
    const { repos, audit, clock } = this.deps;
    const trigger = await repos.triggers.findInOrg(actor.orgId, triggerId);
    if (!trigger || !(await repos.triggers.softDelete(actor.orgId, trigger.id, isoNow(clock)))) {
      throw notFound('Trigger');
    }
    this.changed(trigger.id);
    await audit.record(
      userAction(actor, 'trigger.delete', 'trigger', trigger.id, { name: trigger.name, type: trigger.type }),
    );
    return { ...(await this.view(trigger)), nextRunAt: null, nextRuns: [] };
  }

  private async find(actor: UserActor, triggerId: string): Promise<Trigger> {
    const trigger = await this.deps.repos.triggers.findInOrg(actor.orgId, triggerId);
    if (!trigger) throw notFound('Trigger');
    return trigger;
  }

  private view(trigger: Trigger): Promise<TriggerView> {
    return triggerView(trigger, this.deps.clock.now(), this.schedules, this.deps.repos.cronOccurrences);
  }

  private async checkConfig(
    orgId: string,
    config: TriggerConfig,
    selfId: string | null,
    agentChanged: boolean,
    checkParams = true,
  ) {
    const { repos } = this.deps;
    if (agentChanged && config.agentId !== null) {
      checkTriggerAgent(config.agentId, await repos.agents.findInOrg(orgId, config.agentId));
    }
    if (config.chatKeyword !== null) checkChatKeywordClash(config, await repos.triggers.listByOrg(orgId), selfId);
    if (checkParams && config.type === 'cron' && config.workflowName !== null) await this.checkFixedParams(config);
  }

  /**
   * A cron trigger's fixed params against the workflow's paramsSchema, when its agent reports the
   * workflow (a workflow not reported yet is checked at each run). Files are checked at each run.
   */
  private async checkFixedParams(config: TriggerConfig): Promise<void> {
    // A selector trigger's agents may report different versions of the workflow: checked at each run.
    if (config.agentId === null) return;
    const workflow = await this.deps.repos.workflows.findActiveByAgentAndName(
      config.agentId,
      config.workflowName as string,
    );
    if (!workflow) return;
    try {
      resolveRunParams(workflow.paramsSchema, config.params ?? undefined);
    } catch (error) {
      throw placeValidation(error, 'body');
    }
  }
}
