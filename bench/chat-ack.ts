/**
 * Benchmark: a chat command to its acknowledgement. Goal: p99 < 100 ms on loopback (Slack and
 * Discord allow 3 s).
 *
 *   pnpm bench bench/chat-ack.ts [--requests 2000] [--concurrency 1]
 *
 * A real coordinator (createCoordinator: SQLite in a temp dir, log level warn) with Slack and
 * Discord set up, a connected workspace and guild, and a chat trigger in each. Each request is
 * what the provider sends: a Slack slash command (form, `v0` HMAC signature) and a Discord
 * `/drover` interaction (JSON, Ed25519 signature), signed afresh per request outside the timing.
 * The time is from sending the request to having read the whole ephemeral answer, which comes
 * after the whole run admission: signature check, workspace and trigger lookup, argument
 * parsing and typing by the paramsSchema, the run rules, the job row committed. The trigger's
 * agent is enrolled but not connected, so the jobs stay pending (their dispatch is not timed).
 */
import { createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startBenchCoordinator } from './lib/coordinator.js';
import { formatLatency, summarize } from './lib/latency.js';
import { machineNote } from './lib/report.js';
import { seedAgent } from './lib/seed.js';

const GOAL_P99_MS = 100;
const { values } = parseArgs({
  options: { requests: { type: 'string', default: '2000' }, concurrency: { type: 'string', default: '1' } },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);

const SIGNING_SECRET = 'bench-signing-secret';
const TEAM = 'T0BENCH';
const GUILD = '1180000000000000777';
const CHANNEL = 'C0BENCH';
const keys = generateKeyPairSync('ed25519');
const spki = keys.publicKey.export({ format: 'der', type: 'spki' });

const bench = await startBenchCoordinator({
  DROVER_SLACK_CLIENT_ID: '1.2',
  DROVER_SLACK_CLIENT_SECRET: 'secret',
  DROVER_SLACK_SIGNING_SECRET: SIGNING_SECRET,
  DROVER_DISCORD_APPLICATION_ID: '1180000000000000001',
  DROVER_DISCORD_PUBLIC_KEY: spki.subarray(spki.length - 32).toString('hex'),
  DROVER_DISCORD_CLIENT_SECRET: 'secret',
  DROVER_DISCORD_BOT_TOKEN: 'bot-token',
});
try {
  const { coordinator, orgId, ownerId } = bench;
  const { repos } = coordinator.ctx;
  const agentId = await seedAgent(coordinator, orgId, 0, [
    {
      name: 'deploy',
      description: 'deploys a release',
      version: '1.0.0',
      paramsSchema: [
        { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
        { name: 'replicas', type: 'number', min: 1, max: 10, default: 2 },
      ],
      secretsKeys: [],
      timeout: 600_000,
      steps: [{ run: './deploy.sh' }],
    },
  ]);
  const at = new Date().toISOString();
  for (const [provider, teamId] of [
    ['slack', TEAM],
    ['discord', GUILD],
  ] as const) {
    await repos.chatIntegrations.connect({
      id: randomUUID(),
      orgId,
      provider,
      teamId,
      teamName: `bench ${provider}`,
      botUserId: null,
      sealedAccessToken: null,
      scopes: '',
      connectedByUserId: ownerId,
      createdAt: at,
    });
    await repos.triggers.insert({
      id: randomUUID(),
      orgId,
      name: `bench ${provider}`,
      type: provider,
      agentId,
      agentSelector: null,
      fanout: null,
      maxParallel: null,
      scopeType: 'workflow',
      workflowName: 'deploy',
      responseMode: 'async',
      responseTimeoutMs: 30_000,
      allowedRefs: null,
      allowDebug: false,
      notifyProvider: null,
      notifyTeamId: null,
      notifyChannelId: null,
      notifyOn: 'none',
      cronExpression: null,
      cronTimezone: null,
      cronEnabled: null,
      cronMissedPolicy: null,
      cronOverlapPolicy: null,
      params: null,
      ref: null,
      cronSince: null,
      chatTeamId: teamId,
      chatChannelId: CHANNEL,
      chatKeyword: 'deploy',
      chatAllowedUserIds: null,
      createdBy: ownerId,
      createdAt: at,
      updatedAt: at,
    });
  }

  const text = 'deploy env=prod replicas=3 ref=v1.42.0';
  let invocations = 0;
  const slackRequest = (): RequestInit & { url: string } => {
    // As Slack sends it: a `trigger_id` of its own for every invocation (the same signed body
    // sent twice would be a replay, answered without a job).
    const body = new URLSearchParams({
      team_id: TEAM,
      channel_id: CHANNEL,
      user_id: 'U0BENCH',
      user_name: 'bench',
      command: '/drover',
      text,
      trigger_id: `${++invocations}.${Date.now()}.bench`,
    }).toString();
    const ts = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', SIGNING_SECRET).update(`v0:${ts}:${body}`).digest('hex');
    return {
      url: `${bench.url}/v1/chat/slack/commands`,
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': String(ts),
        'x-slack-signature': `v0=${signature}`,
      },
      body,
    };
  };
  const discordRequest = (): RequestInit & { url: string } => {
    const body = JSON.stringify({
      id: randomUUID(),
      type: 2,
      guild_id: GUILD,
      channel_id: CHANNEL,
      member: { user: { id: '1180000000000000321', username: 'bench' } },
      data: { name: 'drover', options: [{ name: 'command', type: 3, value: text }] },
    });
    const ts = String(Math.floor(Date.now() / 1000));
    return {
      url: `${bench.url}/v1/chat/discord/interactions`,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-signature-timestamp': ts,
        'x-signature-ed25519': sign(null, Buffer.from(ts + body), keys.privateKey).toString('hex'),
      },
      body,
    };
  };

  const measure = async (make: () => RequestInit & { url: string }, count: number): Promise<number[]> => {
    const samples: number[] = [];
    let next = 0;
    const worker = async () => {
      while (next < count) {
        next++;
        const { url, ...init } = make();
        const start = performance.now();
        const res = await fetch(url, init);
        const answer = await res.text();
        samples.push(performance.now() - start);
        if (res.status !== 200 || !answer.includes('Started job #')) {
          throw new Error(`unexpected answer ${res.status}: ${answer}`);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return samples;
  };

  console.log(`chat acknowledgement, ${requests} requests per provider, ${concurrency} at a time; ${machineNote()}`);
  let worst = 0;
  for (const [label, make] of [
    ['Slack /drover (form, HMAC)', slackRequest],
    ['Discord /drover (JSON, Ed25519)', discordRequest],
  ] as const) {
    await measure(make, Math.min(200, requests)); // warm-up
    const summary = summarize(await measure(make, requests));
    worst = Math.max(worst, summary.p99);
    console.log(formatLatency(label, summary));
  }
  console.log(
    `goal p99 < ${GOAL_P99_MS} ms: ${worst < GOAL_P99_MS ? 'met' : 'MISSED'} (worst p99 ${worst.toFixed(2)} ms)`,
  );
} finally {
  await bench.close();
}
