import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far a request's timestamp may be from now: Slack's recommended replay window. */
export const SLACK_TIMESTAMP_WINDOW_SECONDS = 5 * 60;

/**
 * Whether a request really comes from Slack (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `X-Slack-Signature` is `v0=` and the hex HMAC-SHA256, under the app's signing secret, of
 * `v0:<X-Slack-Request-Timestamp>:<raw body>`, and the timestamp is within five minutes of now.
 * Answers why not, or null when it does.
 */
export function slackSignatureProblem(
  signingSecret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  rawBody: Buffer,
  nowMs: number,
): string | null {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature) return 'X-Slack-Request-Timestamp and X-Slack-Signature are required';
  if (!/^\d{1,12}$/.test(timestamp)) return 'X-Slack-Request-Timestamp is not a Unix time';
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SLACK_TIMESTAMP_WINDOW_SECONDS) {
    return 'X-Slack-Request-Timestamp is more than five minutes away from now';
  }
  const expected = Buffer.from(
    `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:`).update(rawBody).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'X-Slack-Signature does not match';
  return null;
}
