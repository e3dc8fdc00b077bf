import { describe, expect, it } from 'vitest';
import {
  escapeMrkdwn,
  slackJobMessage,
  slackPost,
  SLACK_LIMITS,
} from '../../../../src/domain/chat/notifications/slack-message.js';
import { hostileBatch, JOB_URL, notice, PUBLIC_URL } from './notice.js';

describe('slackJobMessage', () => {
  it('shows number, trigger, outcome, workflow, ref, duration, exit code, error line, outputs and the job link', () => {
    const message = slackJobMessage(notice(), 'C0BUILDS', `${PUBLIC_URL}/`);
    expect(message).toEqual({
      channel: 'C0BUILDS',
      text: `Drover job #42 nightly build: FAILED (ref main, 3 min 5 s, exit code 2): step 2 (test) exited with code 2 ${JOB_URL}`,
      unfurl_links: false,
      unfurl_media: false,
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: '#42 nightly build: FAILED', emoji: false } },
        {
          type: 'section',
          fields: [
            { type: 'mrkdwn', text: '*Outcome*\n:x: FAILED' },
            { type: 'mrkdwn', text: '*Workflow*\nbuild' },
            { type: 'mrkdwn', text: '*Ref*\n`main`' },
            { type: 'mrkdwn', text: '*Duration*\n3 min 5 s' },
            { type: 'mrkdwn', text: '*Exit code*\n2' },
          ],
        },
        { type: 'section', text: { type: 'mrkdwn', text: '*Error*\n```step 2 (test) exited with code 2```' } },
        {
          type: 'section',
          text: { type: 'mrkdwn', text: '*Output*\n• *version*: `1.4.2`\n• *artifact*: `file f-1`' },
        },
        { type: 'context', elements: [{ type: 'mrkdwn', text: `<${JOB_URL}|Open job #42 in Drover>` }] },
      ],
    });
  });

  it('has no error section for a success, and says when the job never ran', () => {
    const success = slackJobMessage(notice({ status: 'success', errorMessage: null, exitCode: 0 }), 'C1', PUBLIC_URL);
    expect(JSON.stringify(success.blocks)).not.toContain('*Error*');
    expect(success.blocks[0]).toMatchObject({ text: { text: '#42 nightly build: SUCCESS' } });
    const rejected = slackJobMessage(
      notice({
        status: 'rejected',
        startedAt: null,
        exitCode: null,
        ref: null,
        output: null,
        errorMessage: 'queue full',
      }),
      'C1',
      PUBLIC_URL,
    );
    expect(rejected.blocks[1]).toMatchObject({
      fields: [
        { text: '*Outcome*\n:no_entry: REJECTED' },
        { text: '*Workflow*\nbuild' },
        { text: '*Ref*\n—' },
        { text: '*Duration*\ndid not run' },
        { text: '*Exit code*\n—' },
      ],
    });
    expect(rejected.text).toBe(`Drover job #42 nightly build: REJECTED: queue full ${JOB_URL}`);
  });

  it("escapes Slack's control characters in values, so an output cannot fake a link or a mention", () => {
    expect(escapeMrkdwn('<!channel> & <https://evil|click>')).toBe('&lt;!channel&gt; &amp; &lt;https://evil|click&gt;');
    const message = slackJobMessage(notice({ output: { note: '<!here> `x`' } }), 'C1', PUBLIC_URL);
    expect(message.blocks[3]).toMatchObject({ text: { text: '*Output*\n• *note*: `&lt;!here&gt; ˋxˋ`' } });
  });

  it("keeps every section within Slack's 3000 characters: long values cut, outputs that do not fit counted", () => {
    const output = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, 'v'.repeat(2000)]));
    const message = slackJobMessage(
      notice({ output, errorMessage: 'e'.repeat(5000), triggerName: 't'.repeat(300) }),
      'C1',
      PUBLIC_URL,
    );
    for (const block of message.blocks) {
      const text = (block.text as { text?: string } | undefined)?.text ?? '';
      expect(text.length).toBeLessThanOrEqual(
        block.type === 'header' ? SLACK_LIMITS.headerText : SLACK_LIMITS.sectionText,
      );
    }
    const outputText = (message.blocks[3]?.text as { text: string }).text;
    expect(outputText).toMatch(/\n… and \d+ more on the job page$/);
    expect(outputText).toContain('• *key0*: `' + 'v'.repeat(499) + '…`');
    expect(message.text.length).toBeLessThanOrEqual(SLACK_LIMITS.fallbackText);
    expect(message.text.endsWith(JOB_URL)).toBe(true);
  });
});

describe('slackPost', () => {
  const reply = { type: 'reply', teamId: 'T1', channelId: 'C0CHAT', userId: 'U0ADA', broadcast: false } as const;

  it('posts an outcome to a channel as chat.postMessage with its blocks', () => {
    const post = slackPost(notice(), { type: 'channel', teamId: 'T1', channelId: 'C1' }, PUBLIC_URL);
    const { channel, ...message } = slackJobMessage(notice(), 'C1', PUBLIC_URL);
    expect(post).toEqual({ method: 'chat.postMessage', args: { channel, ...message } });
  });

  it("answers a chat run's writer in their mention's thread, naming them; broadcast to the channel when it stands for the notification", () => {
    const post = slackPost(notice(), { ...reply, messageId: '1700.000100' }, PUBLIC_URL);
    expect(post.method).toBe('chat.postMessage');
    expect(post.args).toMatchObject({
      channel: 'C0CHAT',
      thread_ts: '1700.000100',
      text: expect.stringMatching(/^<@U0ADA> Drover job #42 nightly build: FAILED/),
    });
    expect(post.args).not.toHaveProperty('reply_broadcast');
    expect(post.args.blocks?.[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '<@U0ADA>, the run you started has ended:' },
    });
    const broadcast = slackPost(notice(), { ...reply, messageId: '1700.000100', broadcast: true }, PUBLIC_URL);
    expect(broadcast.args).toMatchObject({ thread_ts: '1700.000100', reply_broadcast: true });
  });

  it('names the writer in the channel after a slash command, which has no message to thread under', () => {
    const post = slackPost(notice(), { ...reply, messageId: null, broadcast: true }, PUBLIC_URL);
    expect(post.args).not.toHaveProperty('thread_ts');
    expect(post.args).not.toHaveProperty('reply_broadcast');
    expect(post.args.text).toMatch(/^<@U0ADA> /);
  });

  it("escapes Slack's control characters in a batch's text: an agent's name cannot ping the channel or plant a link", () => {
    const post = slackPost(hostileBatch(), { type: 'channel', teamId: 'T1', channelId: 'C1' }, PUBLIC_URL);
    expect(post.args.text).toBe(
      'Drover batch #7 Fleet greeter (greet): PARTIAL, 1 of 3 succeeded, 2 failed: ' +
        '&lt;!channel&gt; &lt;https://evil.example/login|Re-authenticate here&gt;, [Re-authenticate](https://evil.example) *now* ' +
        `${PUBLIC_URL}/api/batches/b1`,
    );
  });

  it('answers a mention to its writer alone with chat.postEphemeral, as text', () => {
    const text = 'Started job #3 (Greeter, workflow `greet`): https://drover.example.com/api/jobs/x';
    expect(
      slackPost(
        { kind: 'chat_answer', text },
        { type: 'ephemeral', teamId: 'T1', channelId: 'C1', userId: 'U0B' },
        PUBLIC_URL,
      ),
    ).toEqual({ method: 'chat.postEphemeral', args: { channel: 'C1', user: 'U0B', text } });
  });
});
