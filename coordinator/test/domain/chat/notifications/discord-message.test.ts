import { describe, expect, it } from 'vitest';
import {
  DISCORD_LIMITS,
  discordJobMessage,
  discordPost,
} from '../../../../src/domain/chat/notifications/discord-message.js';
import { hostileBatch, JOB_URL, notice, PUBLIC_URL } from './notice.js';

const embedTotal = (embed: ReturnType<typeof discordJobMessage>['embeds'][0]) =>
  embed.title.length + embed.footer.text.length + embed.fields.reduce((n, f) => n + f.name.length + f.value.length, 0);

describe('discordJobMessage', () => {
  it('is an embed coloured by outcome with every detail, and a content fallback; it pings nobody', () => {
    expect(discordJobMessage(notice(), PUBLIC_URL)).toEqual({
      content: `Drover job #42 nightly build: FAILED ${JOB_URL}`,
      allowed_mentions: { parse: [] },
      embeds: [
        {
          title: '#42 nightly build: FAILED',
          url: JOB_URL,
          color: 0xe01e5a,
          footer: { text: 'Drover' },
          timestamp: '2026-03-01T10:03:05.000Z',
          fields: [
            { name: 'Workflow', value: 'build', inline: true },
            { name: 'Ref', value: '`main`', inline: true },
            { name: 'Duration', value: '3 min 5 s', inline: true },
            { name: 'Exit code', value: '2', inline: true },
            { name: 'Error', value: '`step 2 (test) exited with code 2`' },
            { name: 'version', value: '`1.4.2`' },
            { name: 'artifact', value: '`file f-1`' },
          ],
        },
      ],
    });
  });

  it("escapes the markdown of the trigger's and the workflow's names where Discord renders it", () => {
    const message = discordJobMessage(
      notice({ triggerName: '[Re-authenticate](https://evil.example) now', workflowName: 'a_b' }),
      PUBLIC_URL,
    );
    expect(message.content).toBe(
      `Drover job #42 \\[Re-authenticate\\]\\(https://evil.example\\) now: FAILED ${JOB_URL}`,
    );
    expect(message.embeds[0].fields[0]).toEqual({ name: 'Workflow', value: 'a\\_b', inline: true });
  });

  it('colours each outcome apart', () => {
    const colours = (['success', 'failed', 'timed_out', 'cancelled', 'rejected'] as const).map(
      (status) => discordJobMessage(notice({ status }), PUBLIC_URL).embeds[0].color,
    );
    expect(new Set(colours).size).toBe(5);
    expect(discordJobMessage(notice({ status: 'timed_out' }), PUBLIC_URL).embeds[0].title).toBe(
      '#42 nightly build: TIMED OUT',
    );
  });

  it("stays within Discord's limits: 1024 per field value, 25 fields, 6000 in all; the rest counted", () => {
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, `value ${i}`]));
    const counted = discordJobMessage(notice({ output: many }), PUBLIC_URL).embeds[0];
    expect(counted.fields).toHaveLength(DISCORD_LIMITS.fields);
    expect(counted.fields.at(-1)).toEqual({ name: 'More output', value: '21 more on the job page' });

    const long = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`key${i}`, 'x'.repeat(3000)]));
    const cut = discordJobMessage(notice({ output: long, errorMessage: 'e'.repeat(3000) }), PUBLIC_URL).embeds[0];
    for (const f of cut.fields) expect(f.value.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
    expect(embedTotal(cut)).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
    expect(cut.fields.at(-1)?.name).toBe('More output');
  });
});

describe('discordPost', () => {
  const reply = { type: 'reply', teamId: 'G1', channelId: '123', userId: '42', broadcast: false } as const;

  it('posts an outcome to a channel as it is, pinging nobody', () => {
    expect(discordPost(notice(), { type: 'channel', teamId: 'G1', channelId: '123' }, PUBLIC_URL)).toEqual(
      discordJobMessage(notice(), PUBLIC_URL),
    );
  });

  it("answers a chat run's writer with a reply to their message that pings them, else a message naming them", () => {
    const toMessage = discordPost(notice(), { ...reply, messageId: '999' }, PUBLIC_URL);
    expect(toMessage).toMatchObject({
      content: discordJobMessage(notice(), PUBLIC_URL).content,
      message_reference: { message_id: '999', fail_if_not_exists: false },
      allowed_mentions: { parse: [], replied_user: true },
    });
    const named = discordPost(notice(), { ...reply, messageId: null }, PUBLIC_URL);
    expect(named.content).toMatch(/^<@42> Drover job #42 nightly build: FAILED/);
    expect(named.allowed_mentions).toEqual({ parse: [], users: ['42'] });
    expect(named).not.toHaveProperty('message_reference');
  });

  it('answers a mention with a reply that pings nobody', () => {
    expect(
      discordPost({ kind: 'chat_answer', text: 'Started job #1' }, { ...reply, messageId: '999' }, PUBLIC_URL),
    ).toEqual({
      content: 'Started job #1',
      allowed_mentions: { parse: [], replied_user: false },
      message_reference: { message_id: '999', fail_if_not_exists: false },
    });
  });

  it("escapes the markdown of the names in a batch's text: an agent's name cannot plant a link", () => {
    const post = discordPost(hostileBatch(), { type: 'channel', teamId: 'G1', channelId: 'C1' }, PUBLIC_URL);
    expect(post).toMatchObject({
      content:
        'Drover batch #7 Fleet greeter (greet): PARTIAL, 1 of 3 succeeded, 2 failed: ' +
        '\\<!channel> \\<https://evil.example/login\\|Re-authenticate here>, ' +
        '\\[Re-authenticate\\]\\(https://evil.example\\) \\*now\\* ' +
        `${PUBLIC_URL}/api/batches/b1`,
      allowed_mentions: { parse: [] },
    });
  });
});
