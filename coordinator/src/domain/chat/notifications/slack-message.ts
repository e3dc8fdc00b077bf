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

/** Slack's limits for what a notification uses (https://api.slack.com/reference/block-kit/blocks). */
export const SLACK_LIMITS = Object.freeze({
  headerText: 150,
  sectionText: 3000,
  fieldText: 2000,
  /** `text` is cut by Slack past 40 000; a fallback needs far less. */
  fallbackText: 3000,
});

/** One output value's share of the output section before it is cut. */
const OUTPUT_VALUE_MAX = 500;

const EMOJI: Record<JobOutcomeNotice['status'], string> = {
  success: ':white_check_mark:',
  failed: ':x:',
  timed_out: ':hourglass:',
  cancelled: ':no_entry_sign:',
  rejected: ':no_entry:',
};

/** Slack's three control characters in mrkdwn text (https://api.slack.com/reference/surfaces/formatting#escaping). */
export const escapeMrkdwn = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A value in a code span: escaped, its backticks (which would end the span) replaced. */
const code = (text: string): string => '`' + escapeMrkdwn(text.replace(/`/g, 'ˋ')) + '`';

export interface SlackBlock {
  type: string;
  [key: string]: unknown;
}

/** The arguments of `chat.postMessage` for a job's outcome: blocks, and `text` for notifications and old clients. */
export interface SlackJobMessage {
  channel: string;
  text: string;
  blocks: SlackBlock[];
  unfurl_links: false;
  unfurl_media: false;
}

/** The output values as bullet lines that fit Slack's section limit; the rest counted. */
function outputText(notice: JobOutcomeNotice, max: number): string | null {
  const entries = outputEntries(notice);
  if (entries.length === 0) return null;
  const title = '*Output*';
  let text = title;
  for (let i = 0; i < entries.length; i++) {
    const [name, value] = entries[i] as [string, string];
    const line = `\n• *${escapeMrkdwn(shorten(name, 100))}*: ${code(shorten(value, OUTPUT_VALUE_MAX))}`;
    const rest = entries.length - i - 1;
    const more = rest > 0 ? `\n… and ${rest} more on the job page` : '';
    if (text.length + line.length + more.length > max) {
      return `${text}\n… and ${entries.length - i} more on the job page`;
    }
    text += line;
  }
  return text;
}

/** The Slack message for a job's outcome (pure: the worker posts it with `chat.postMessage`). */
export function slackJobMessage(notice: JobOutcomeNotice, channelId: string, publicUrl: string): SlackJobMessage {
  const label = OUTCOME_LABELS[notice.status];
  const url = jobUrl(publicUrl, notice.jobId);
  const duration = formatDuration(notice);
  const error = errorLine(notice);
  const field = (name: string, value: string) => ({
    type: 'mrkdwn',
    text: shorten(`*${name}*\n${value}`, SLACK_LIMITS.fieldText),
  });
  const blocks: SlackBlock[] = [
    {
      type: 'header',
      text: {
        type: 'plain_text',
        text: shorten(`#${notice.number} ${notice.triggerName}: ${label}`, SLACK_LIMITS.headerText),
        emoji: false,
      },
    },
    {
      type: 'section',
      fields: [
        field('Outcome', `${EMOJI[notice.status]} ${label}`),
        field('Workflow', escapeMrkdwn(notice.workflowName)),
        field('Ref', notice.ref === null ? '—' : code(notice.ref)),
        field('Duration', duration ?? 'did not run'),
        field('Exit code', notice.exitCode === null ? '—' : String(notice.exitCode)),
      ],
    },
  ];
  if (error !== null) {
    const prefix = '*Error*\n```';
    const room = SLACK_LIMITS.sectionText - prefix.length - 3;
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: `${prefix}${shorten(escapeMrkdwn(error.replace(/```/g, 'ˋˋˋ')), room)}\`\`\`` },
    });
  }
  const output = outputText(notice, SLACK_LIMITS.sectionText);
  if (output !== null) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: output } });
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: `<${url}|Open job #${notice.number} in Drover>` }],
  });

  const details = [
    notice.ref === null ? null : `ref ${notice.ref}`,
    duration,
    notice.exitCode === null ? null : `exit code ${notice.exitCode}`,
  ].filter((d): d is string => d !== null);
  const fallback = [
    escapeMrkdwn(summaryLine(notice)),
    details.length > 0 ? ` (${escapeMrkdwn(details.join(', '))})` : '',
    error === null ? '' : `: ${escapeMrkdwn(error)}`,
  ].join('');
  const link = ` ${url}`;
  return {
    channel: channelId,
    text: shorten(fallback, SLACK_LIMITS.fallbackText - link.length) + link,
    blocks,
    unfurl_links: false,
    unfurl_media: false,
  };
}

/** A Slack Web API call that posts one outbox message. */
export type SlackPost =
  | {
      method: 'chat.postMessage';
      args: {
        channel: string;
        text: string;
        blocks?: SlackBlock[];
        thread_ts?: string;
        reply_broadcast?: boolean;
        unfurl_links: false;
        unfurl_media: false;
      };
    }
  | {
      method: 'chat.postEphemeral';
      args: { channel: string; user: string; text: string; blocks?: SlackBlock[]; thread_ts?: string };
    };

/**
 * How an outbox message goes to Slack (pure): a job's outcome as blocks, a mention's answer as
 * text; to a channel, to one person only (`chat.postEphemeral`), or as the answer to a chat
 * run's writer: in the thread of their mention (shown in the channel too when it stands for the
 * trigger's notification there), or naming them in the channel after a slash command.
 */
export function slackPost(payload: OutboxPayload, target: OutboxTarget, publicUrl: string): SlackPost {
  const content: { text: string; blocks?: SlackBlock[] } =
    payload.kind === 'job_outcome'
      ? (({ text, blocks }) => ({ text, blocks }))(slackJobMessage(payload, target.channelId, publicUrl))
      : { text: shorten(escapeMrkdwn(plainText(payload, publicUrl)), SLACK_LIMITS.fallbackText) };
  const unfurl = { unfurl_links: false, unfurl_media: false } as const;
  switch (target.type) {
    case 'channel':
      return { method: 'chat.postMessage', args: { channel: target.channelId, ...content, ...unfurl } };
    case 'ephemeral':
      return {
        method: 'chat.postEphemeral',
        args: {
          channel: target.channelId,
          user: target.userId,
          ...content,
          ...(target.threadId ? { thread_ts: target.threadId } : {}),
        },
      };
    case 'reply': {
      const mention = `<@${target.userId}>`;
      const blocks = content.blocks && [
        { type: 'section', text: { type: 'mrkdwn', text: `${mention}, the run you started has ended:` } },
        ...content.blocks,
      ];
      const thread =
        target.messageId === null
          ? {}
          : { thread_ts: target.messageId, ...(target.broadcast ? { reply_broadcast: true } : {}) };
      return {
        method: 'chat.postMessage',
        args: {
          channel: target.channelId,
          text: `${mention} ${content.text}`,
          ...(blocks ? { blocks } : {}),
          ...thread,
          ...unfurl,
        },
      };
    }
  }
}
