import { describe, expect, it } from 'vitest';
import { parseChatCommand } from '../../../../src/domain/chat/arguments.js';
import { slackTypedText } from '../../../../src/domain/chat/providers/slack-text.js';

describe('slackTypedText', () => {
  it('gives back the three characters Slack escapes in what people write', () => {
    expect(slackTypedText('deploy msg="Ada &amp; Bob &lt;ops&gt;"')).toBe('deploy msg="Ada & Bob <ops>"');
    // A writer's own `&lt;` arrives as `&amp;lt;`: decoded once, it is `&lt;` again.
    expect(slackTypedText('deploy note=&amp;lt;b&amp;gt;')).toBe('deploy note=&lt;b&gt;');
    expect(slackTypedText('deploy env=prod')).toBe('deploy env=prod');
  });

  it('gives back the links Slack recognised as they were typed', () => {
    expect(slackTypedText('deploy url=<https://example.com/build?a=1&amp;b=2>')).toBe(
      'deploy url=https://example.com/build?a=1&b=2',
    );
    expect(
      slackTypedText('deploy host=<http://example.com|example.com> to=<mailto:ops@example.com|ops@example.com>'),
    ).toBe('deploy host=example.com to=ops@example.com');
  });

  it('leaves mentions of people and channels as Slack writes them: their ids', () => {
    expect(slackTypedText('deploy owner=<@U0123ABCD> room=<#C0456EFGH|ops> <!here>')).toBe(
      'deploy owner=<@U0123ABCD> room=<#C0456EFGH|ops> <!here>',
    );
  });

  it('makes the arguments the run gets those the writer typed', () => {
    const parsed = parseChatCommand(
      slackTypedText('deploy msg="R&amp;D &gt; ops" url=<https://x.example/?q=a&amp;r=b>'),
    );
    expect(parsed).toEqual({
      ok: true,
      command: { keyword: 'deploy', args: { msg: 'R&D > ops', url: 'https://x.example/?q=a&r=b' }, ref: undefined },
    });
  });
});
