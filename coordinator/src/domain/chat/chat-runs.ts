import { randomUUID } from 'node:crypto';
import type { OutboxTarget } from '../model/chat-outbox.js';
import type { ChatOrigin } from '../model/jobs.js';
import type { Repositories } from '../model/repositories.js';
import type { Trigger } from '../model/triggers.js';
import { AppError } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { chatActor, type TriggerRunService } from '../trigger-run/run-trigger.js';
import { statusUrl, type TriggerRunBody } from '../trigger-run/request.js';
import { batchStatusUrl } from '../fleet/batch-service.js';
import { workflowLimitMessage } from '../trigger-run/rate-windows.js';
import { argumentsToParams, parseChatCommand } from './arguments.js';
import { escapeMarkdown } from './notifications/discord-message.js';

/**
 * How a name others chose (an agent's, a trigger's) enters an answer in the provider's markup:
 * as plain text (Discord's markdown escaped; Slack's control characters are escaped on the whole
 * text where it is sent), or inside a code span, which no backtick of the value may end.
 */
interface Markup {
  plain: (value: string) => string;
  code: (value: string) => string;
}
const markupOf = (provider: ChatOrigin['provider']): Markup => ({
  plain: provider === 'discord' ? escapeMarkdown : (value) => value,
  code: (value) => '`' + value.replace(/`/g, 'ˋ') + '`',
});

/** A chat command as the provider delivered it: who, where, the text after `/drover` or the mention. */
export interface ChatCommandInput extends ChatOrigin {
  text: string;
  /**
   * The provider's id of this delivery (a Slack event id, a Discord interaction id): a delivery
   * seen before answers its first job again instead of starting a second (the run's idempotency key).
   */
  deliveryId: string | null;
  /**
   * The thread the command was written in, when it was (Slack's `thread_ts` of a mention in a
   * thread): its answer is shown there, not in the channel's view.
   */
  threadId?: string | null;
  /**
   * Where the answer and the outcome go when not to `channelId`: the Discord thread the command
   * was written in, a channel of its own (`channelId` is its parent's, where the triggers listen).
   */
  replyChannelId?: string | null;
}

/** What to tell the person who wrote the command, at once and only to them (ephemeral). */
export type ChatRunAnswer =
  | {
      kind: 'started';
      jobId: string;
      jobNumber: number;
      /** Absolute address of the job page. */
      jobUrl: string;
      trigger: Pick<Trigger, 'id' | 'name' | 'orgId'>;
      workflowName: string;
      /** A repeated delivery: the job is the one the first delivery started. */
      repeated: boolean;
      text: string;
    }
  /** A batch on the agents the trigger selects (docs/fleets.md): one message when it ends. */
  | {
      kind: 'batch_started';
      batchId: string;
      jobCount: number;
      /** Absolute address of the batch page. */
      batchUrl: string;
      trigger: Pick<Trigger, 'id' | 'name' | 'orgId'>;
      workflowName: string;
      repeated: boolean;
      text: string;
    }
  /** Nothing started: the text says why (not connected, unknown keyword, a bad argument, a refusal). */
  | { kind: 'not_started'; text: string };

const USAGE =
  'Write `/drover <keyword> key=value ...` (quote values with spaces: `msg="two words"`; `ref=<ref>` sets the ref).';

/**
 * Chat triggers (docs/chat.md, "Chat triggers"): the trigger of the connected workspace's
 * channel whose keyword is the command's first word runs through the TriggerRunService, with
 * the arguments as params, as `chatActor`. Every refusal is an answer in plain words, never an
 * exception: the provider shows it to the person who wrote the command.
 */
export class ChatRunService {
  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'chatIntegrations' | 'triggers' | 'jobs' | 'chatOutbox' | 'agents' | 'batches'>;
      runs: TriggerRunService;
      clock: Clock;
      /** The coordinator's public URL, read at each call. */
      publicUrl: () => string;
      /** Something was queued in the chat outbox: its delivery worker sends it now. */
      queued: () => void;
    },
  ) {}

  /**
   * The answer to a command written as a mention, which has no HTTP response to carry it: queued
   * in the chat outbox (sent at once, retried like every message), to the writer alone in Slack,
   * as a reply to their message in Discord. A delivery seen before queues nothing new.
   */
  async answerMention(input: ChatCommandInput, answer: ChatRunAnswer): Promise<void> {
    const { repos, clock } = this.deps;
    const { provider, teamId, channelId, userId } = input;
    const integration = await repos.chatIntegrations.findByTeam(provider, teamId);
    if (!integration) return; // Nobody to post as: the workspace is not connected.
    const target: OutboxTarget =
      provider === 'slack'
        ? { type: 'ephemeral', teamId, channelId, userId, ...(input.threadId ? { threadId: input.threadId } : {}) }
        : {
            type: 'reply',
            teamId,
            channelId: input.replyChannelId ?? channelId,
            userId,
            messageId: input.messageId ?? null,
            broadcast: false,
          };
    await repos.chatOutbox.enqueue({
      orgId: integration.orgId,
      dedupeKey: `answer:${provider}:${input.deliveryId ?? randomUUID()}`,
      jobId: answer.kind === 'started' ? answer.jobId : null,
      provider,
      target,
      payload: { kind: 'chat_answer', text: answer.text },
      createdAt: isoAt(clock.now()),
    });
    this.deps.queued();
  }

  async run(input: ChatCommandInput): Promise<ChatRunAnswer> {
    const { repos, runs } = this.deps;
    const notStarted = (text: string): ChatRunAnswer => ({ kind: 'not_started', text });
    const integration = await repos.chatIntegrations.findByTeam(input.provider, input.teamId);
    if (!integration) {
      return notStarted(
        'This workspace is not connected to Drover (or was disconnected): an owner connects it on the Integrations page of the dashboard.',
      );
    }
    const parsed = parseChatCommand(input.text);
    if (!parsed.ok) return notStarted(`Nothing was started: ${parsed.problem}. ${USAGE}`);
    const { keyword, args, ref } = parsed.command;
    const m = markupOf(input.provider);
    const triggers = await repos.triggers.listInChatChannel(
      integration.orgId,
      input.provider,
      input.teamId,
      input.channelId,
    );
    const trigger = triggers.find((t) => t.chatKeyword?.toLowerCase() === keyword);
    if (!trigger) {
      const keywords = triggers.map((t) => m.code(t.chatKeyword ?? '')).join(', ');
      const which = keyword === '' ? 'No keyword given.' : `No trigger answers ${m.code(keyword)} in this channel.`;
      return notStarted(
        triggers.length === 0
          ? `${which} No Drover trigger listens in this channel yet: an operator creates one in the dashboard.`
          : `${which} Keywords here: ${keywords}. ${USAGE}`,
      );
    }

    if (trigger.chatAllowedUserIds !== null && !trigger.chatAllowedUserIds.includes(input.userId)) {
      return notStarted(
        `Nothing was started: only the people the trigger ${m.code(trigger.chatKeyword ?? keyword)} lists may run it, and your user id ${m.code(input.userId)} is not among them (an operator adds it on the trigger's page in Drover).`,
      );
    }
    const target = await runs.target(integration.orgId, trigger.id);
    if (!target) return notStarted(`The trigger ${m.code(keyword)} is gone.`);
    // An agent-scoped trigger runs the workflow the command names (`workflow=<name>`).
    const { workflow: workflowArg, ...rest } = args;
    const named = trigger.scopeType === 'agent' ? workflowArg : undefined;
    const paramArgs = trigger.scopeType === 'agent' ? rest : args;
    const workflowName = trigger.workflowName ?? named;
    if (workflowName === undefined) {
      return notStarted(
        `The trigger ${m.code(keyword)} runs any workflow of its agent: name one with \`workflow=<name>\`.`,
      );
    }
    const workflow = await target.workflow(workflowName);
    const typed = argumentsToParams(paramArgs, workflow?.paramsSchema ?? null);
    if (!typed.ok) return notStarted(`Nothing was started: ${typed.problems.join('; ')}.`);
    const request: TriggerRunBody = {
      params: typed.params,
      ...(ref === undefined ? {} : { ref }),
      ...(named === undefined ? {} : { workflowName: named }),
    };
    const origin: ChatOrigin = {
      provider: input.provider,
      teamId: input.teamId,
      channelId: input.replyChannelId ?? input.channelId,
      userId: input.userId,
      userName: input.userName,
      ...(input.messageId ? { messageId: input.messageId } : {}),
    };
    let outcome;
    try {
      outcome = await runs.run({
        target,
        actor: chatActor(trigger, origin),
        request,
        idempotencyKey: input.deliveryId === null ? null : `${input.provider}:${input.deliveryId}`,
      });
    } catch (error) {
      if (error instanceof AppError) return notStarted(`Nothing was started: ${chatWords(error.message)}`);
      throw error;
    }
    if (outcome.outcome === 'rate_limited') {
      return notStarted(`Nothing was started: ${workflowLimitMessage(outcome.workflowName, outcome.refusal)}.`);
    }
    if (outcome.outcome === 'batch') {
      const batch = await repos.batches.findById(outcome.batchId);
      const batchUrl = `${this.deps.publicUrl()}${batchStatusUrl(outcome.batchId)}`;
      const count = outcome.jobIds.length;
      return {
        kind: 'batch_started',
        batchId: outcome.batchId,
        jobCount: count,
        batchUrl,
        trigger: { id: trigger.id, name: trigger.name, orgId: trigger.orgId },
        workflowName,
        repeated: outcome.repeated,
        text: `Started batch #${batch?.number ?? 0} (${m.plain(trigger.name)}, workflow ${m.code(workflowName)}) on ${count} ${
          count === 1 ? 'agent' : 'agents'
        }: ${batchUrl}. One message follows when every job has ended.`,
      };
    }
    const job = await repos.jobs.findById(outcome.jobId);
    // The same message delivered again, after a limit refused its run: still refused, as it was told.
    if (outcome.repeated && job?.status === 'rejected') {
      return notStarted(`Nothing was started: ${job.errorMessage ?? 'a limit refused this run'}.`);
    }
    const jobNumber = job?.number ?? 0;
    const jobUrl = `${this.deps.publicUrl()}${statusUrl(outcome.jobId)}`;
    // As the webhook call would: the job is accepted, and waits for an agent that is offline.
    const agent = trigger.agentId === null ? null : await repos.agents.findById(trigger.agentId);
    const waits =
      agent && agent.status !== 'connected'
        ? ` The agent ${m.plain(agent.name)} is not connected: the job waits until it is.`
        : '';
    return {
      kind: 'started',
      jobId: outcome.jobId,
      jobNumber,
      jobUrl,
      trigger: { id: trigger.id, name: trigger.name, orgId: trigger.orgId },
      workflowName,
      repeated: outcome.repeated,
      text: `Started job #${jobNumber} (${m.plain(trigger.name)}, workflow ${m.code(workflowName)}${ref === undefined ? '' : `, ref ${m.code(ref)}`}): ${jobUrl}${waits}`,
    };
  }
}

/** A run's refusal in the words of a chat command: `params.env` is the argument `env`. */
function chatWords(message: string): string {
  return message.replace(/\bparams\.([\w-]+)/g, '`$1`').replace(/\bref\b:/, '`ref`:');
}
