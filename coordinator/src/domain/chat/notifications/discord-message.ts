import type { JobOutcomeNotice, OutboxPayload, OutboxTarget } from '../../model/chat-outbox.js';
import {
  errorLine,
  formatDuration,
  jobUrl,
  OUTCOME_LABELS,
  outputEntries,
  plainText,
  shorten,
  summaryLine,
} from './notice-text.js';

/** Discord's limits for messages and embeds (https://discord.com/developers/docs/resources/message#embed-object-embed-limits). */
export const DISCORD_LIMITS = Object.freeze({
  content: 2000,
  title: 256,
  fieldName: 256,
  fieldValue: 1024,
  fields: 25,
  /** The sum of every title, description, field name and value, footer and author text of a message's embeds. */
  embedTotal: 6000,
});

/** The embed's colour by outcome. */
export const DISCORD_COLOURS: Record<JobOutcomeNotice['status'], number> = {
  success: 0x2eb67d,
  failed: 0xe01e5a,
  timed_out: 0xecb22e,
  cancelled: 0x9aa0a6,
  rejected: 0xa3195b,
};

export interface DiscordEmbedField {
  name: string;
  value: string;
  inline?: boolean;
}

export interface DiscordEmbed {
  title: string;
  url: string;
  color: number;
  fields: DiscordEmbedField[];
  footer: { text: string };
  timestamp?: string;
}

/** The body of `POST /channels/{id}/messages` for a job's outcome: an embed, `content` as the fallback. */
export interface DiscordJobMessage {
  content: string;
  embeds: [DiscordEmbed];
  /** Nothing in the message pings anyone (an output value may contain `@everyone`). */
  allowed_mentions: { parse: [] };
}

/** A value in a code span (Discord renders its markdown nowhere inside); backticks that would end it replaced. */
/**
 * A value inside a line as plain text in Discord's markdown: its emphasis, code, spoiler and
 * masked-link characters, and `<` (mentions, timestamps), escaped with a backslash
 * (https://support.discord.com/hc/en-us/articles/210298617).
 */
export const escapeMarkdown = (text: string): string => text.replace(/[\\*_~`|[\]()<]/g, '\\$&');

const code = (text: string, max: number): string => '`' + shorten(text.replace(/`/g, 'ˋ'), max - 2) + '`';

const FOOTER = 'Drover';
const fieldSize = (f: DiscordEmbedField): number => f.name.length + f.value.length;

/** The Discord message for a job's outcome (pure: the worker posts it). */
export function discordJobMessage(notice: JobOutcomeNotice, publicUrl: string): DiscordJobMessage {
  const label = OUTCOME_LABELS[notice.status];
  const url = jobUrl(publicUrl, notice.jobId);
  const duration = formatDuration(notice);
  const error = errorLine(notice);
  const title = shorten(`#${notice.number} ${notice.triggerName}: ${label}`, DISCORD_LIMITS.title);
  const fields: DiscordEmbedField[] = [
    { name: 'Workflow', value: shorten(escapeMarkdown(notice.workflowName), DISCORD_LIMITS.fieldValue), inline: true },
    { name: 'Ref', value: notice.ref === null ? '—' : code(notice.ref, DISCORD_LIMITS.fieldValue), inline: true },
    { name: 'Duration', value: duration ?? 'did not run', inline: true },
    { name: 'Exit code', value: notice.exitCode === null ? '—' : String(notice.exitCode), inline: true },
  ];
  if (error !== null) {
    fields.push({ name: 'Error', value: code(error, DISCORD_LIMITS.fieldValue) });
  }
  // Output values, one field each, while the field count and the embed's total allow; one last
  // field says how many did not fit.
  const outputs = outputEntries(notice);
  const moreField = (n: number): DiscordEmbedField => ({ name: 'More output', value: `${n} more on the job page` });
  const reserve = fieldSize(moreField(outputs.length));
  let total = title.length + FOOTER.length + fields.reduce((sum, f) => sum + fieldSize(f), 0);
  for (let i = 0; i < outputs.length; i++) {
    const [name, value] = outputs[i] as [string, string];
    const field: DiscordEmbedField = {
      name: shorten(name, DISCORD_LIMITS.fieldName),
      value: value === '' ? '(empty)' : code(value, DISCORD_LIMITS.fieldValue),
    };
    const last = i === outputs.length - 1;
    const slotsLeft = DISCORD_LIMITS.fields - fields.length - (last ? 0 : 1);
    const roomLeft = DISCORD_LIMITS.embedTotal - total - (last ? 0 : reserve);
    if (slotsLeft < 1 || fieldSize(field) > roomLeft) {
      fields.push(moreField(outputs.length - i));
      break;
    }
    fields.push(field);
    total += fieldSize(field);
  }

  return {
    content: shorten(`${summaryLine(notice, escapeMarkdown)} ${url}`, DISCORD_LIMITS.content),
    embeds: [
      {
        title,
        url,
        color: DISCORD_COLOURS[notice.status],
        fields,
        footer: { text: FOOTER },
        ...(notice.finishedAt ? { timestamp: notice.finishedAt } : {}),
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

/** The body of `POST /channels/{id}/messages` for one outbox message. */
export interface DiscordMessageBody {
  content: string;
  embeds?: DiscordEmbed[];
  allowed_mentions: { parse: []; users?: string[]; replied_user?: boolean };
  message_reference?: { message_id: string; fail_if_not_exists: false };
}

/**
 * How an outbox message goes to Discord (pure): a job's outcome as an embed, a mention's answer
 * as text, to a channel or as an answer to a chat run's writer: a reply to their message when
 * there is one, else a message that names them. Only the outcome pings the writer (they may
 * have left); nothing else ever pings anyone. Discord has no messages seen by one person outside
 * interactions, so there is no `ephemeral` target here.
 */
export function discordPost(
  payload: OutboxPayload,
  target: Exclude<OutboxTarget, { type: 'ephemeral' }>,
  publicUrl: string,
): DiscordMessageBody {
  const base: DiscordMessageBody =
    payload.kind === 'job_outcome'
      ? discordJobMessage(payload, publicUrl)
      : {
          content: shorten(plainText(payload, publicUrl, escapeMarkdown), DISCORD_LIMITS.content),
          allowed_mentions: { parse: [] },
        };
  if (target.type === 'channel') return base;
  const ping = payload.kind !== 'chat_answer';
  const { messageId } = target;
  if (messageId !== null) {
    return {
      ...base,
      allowed_mentions: { parse: [], replied_user: ping },
      message_reference: { message_id: messageId, fail_if_not_exists: false },
    };
  }
  if (!ping) return base;
  return {
    ...base,
    content: shorten(`<@${target.userId}> ${base.content}`, DISCORD_LIMITS.content),
    allowed_mentions: { parse: [], users: [target.userId] },
  };
}
