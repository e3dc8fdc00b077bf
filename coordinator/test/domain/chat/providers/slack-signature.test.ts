import { describe, expect, it } from 'vitest';
import { slackSignatureProblem } from '../../../../src/domain/chat/providers/slack-signature.js';

// Slack's own worked example (https://api.slack.com/authentication/verifying-requests-from-slack).
const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const TIMESTAMP = '1531420618';
const BODY = Buffer.from(
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
);
const SIGNATURE = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
const AT = Number(TIMESTAMP) * 1000;

describe('slackSignatureProblem', () => {
  it("accepts Slack's published example within five minutes of its timestamp", () => {
    expect(slackSignatureProblem(SECRET, { timestamp: TIMESTAMP, signature: SIGNATURE }, BODY, AT)).toBeNull();
    expect(
      slackSignatureProblem(SECRET, { timestamp: TIMESTAMP, signature: SIGNATURE }, BODY, AT + 300_000),
    ).toBeNull();
  });

  it('refuses another secret, another body, an old or future timestamp, and missing headers', () => {
    const check = (
      secret: string,
      timestamp: string | undefined,
      signature: string | undefined,
      body = BODY,
      now = AT,
    ) => slackSignatureProblem(secret, { timestamp, signature }, body, now);
    expect(check('another-secret', TIMESTAMP, SIGNATURE)).toBe('X-Slack-Signature does not match');
    expect(check(SECRET, TIMESTAMP, SIGNATURE, Buffer.concat([BODY, Buffer.from('&x=1')]))).toBe(
      'X-Slack-Signature does not match',
    );
    expect(check(SECRET, TIMESTAMP, SIGNATURE.slice(0, -1))).toBe('X-Slack-Signature does not match');
    expect(check(SECRET, TIMESTAMP, SIGNATURE, BODY, AT + 301_000)).toBe(
      'X-Slack-Request-Timestamp is more than five minutes away from now',
    );
    expect(check(SECRET, TIMESTAMP, SIGNATURE, BODY, AT - 301_000)).toMatch(/five minutes/);
    expect(check(SECRET, '1e9', SIGNATURE)).toBe('X-Slack-Request-Timestamp is not a Unix time');
    expect(check(SECRET, undefined, SIGNATURE)).toMatch(/are required/);
    expect(check(SECRET, TIMESTAMP, undefined)).toMatch(/are required/);
  });
});
