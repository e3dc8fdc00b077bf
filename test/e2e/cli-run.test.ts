import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { showControls } from '@drover/shared';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
import {
  buildDrover,
  droverInProcess as drover,
  spawnDrover,
  stopDrover,
  type DroverProcess,
} from '../helpers/cli-binary.js';
import { OWNER_EMAIL, OWNER_PASSWORD } from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * `drover run` and the session commands that follow jobs, against a real coordinator and a real
 * agent: every exit code, the `--json` shapes, a bad token and an unknown trigger. The commands
 * run in this process (`runCli`, what the executable runs: ~0.5 s less a call); the built single
 * executable where a test needs a process (a wait that goes on while other commands run, Ctrl-C on a watch).
 */

let rig: DaemonRig;
let env: Record<string, string>;
let configHome: string;
const triggers: Record<string, string> = {};
let limitedToken: string;
let running: DroverProcess | undefined;

const PAD = 'x'.repeat(290);

const WORKFLOWS = (work: string): Record<string, string[]> => ({
  greet: [
    'name: greet',
    'params:',
    '  - {name: who, type: string, default: world}',
    '  - {name: times, type: number, default: 1}',
    'steps:',
    '  - run: echo "greeting $DROVER_PARAM_WHO"; echo "greeting=hi $DROVER_PARAM_WHO x$DROVER_PARAM_TIMES" >> "$DROVER_OUTPUT"',
    '    shell: true',
    // Sequences that set the clipboard (OSC 52) and erase the line (CSI), for the terminal to never obey.
    "  - run: printf 'sequences \\033]52;c;aGk=\\007 \\033[2K\\n'",
    '    shell: true',
  ],
  // 12,000 lines of 300 bytes: pages of the API's log end at about 1 MiB, before 5,000 lines.
  chatty: ['name: chatty', 'steps:', `  - run: seq -f "line %g ${PAD}" 12000`, '    shell: true'],
  broken: ['name: broken', 'steps:', '  - run: echo failing; exit 3', '    shell: true'],
  hang: ['name: hang', 'steps:', '  - run: sleep 30', '    shell: true', '    timeout: 1s'],
  // Runs until the test creates the file named by its `gate` param (at most 30 s).
  gated: [
    'name: gated',
    'params:',
    '  - {name: gate, type: string, required: true}',
    'steps:',
    `  - run: for i in $(seq 600); do [ -f "${work}/$DROVER_PARAM_GATE" ] && break; sleep 0.05; done`,
    '    shell: true',
  ],
});

beforeAll(async () => {
  rig = await startDaemonRig({ workPrefix: 'drover-cli-run-', workflows: WORKFLOWS });
  const { t, a } = rig;
  const create = async (name: string, workflowName: string, extra: Record<string, unknown> = {}) => {
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: { name, agentId: a.agentId, scopeType: 'workflow', workflowName, responseMode: 'async', ...extra },
    });
    if (res.status !== 201) throw new Error(`trigger ${name}: ${res.status} ${res.text}`);
    triggers[name] = res.body.id;
  };
  await create('greet', 'greet');
  await create('greet-sync', 'greet', { responseMode: 'sync' });
  await create('chatty', 'chatty');
  await create('broken-sync', 'broken', { responseMode: 'sync' });
  await create('hang-sync', 'hang', { responseMode: 'sync' });
  await create('gated', 'gated');
  await create('gated-sync', 'gated', { responseMode: 'sync', responseTimeoutMs: 1000 });
  const token = await issueApiToken(t.owner, t.orgId, [
    { type: 'trigger', triggerIds: Object.values(triggers) },
    { type: 'agent', agentIds: [a.agentId] },
  ]);
  const limited = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [triggers.greet!] }], {
    rateLimitPerHour: 1,
    rateLimitPerDay: 1,
  });
  limitedToken = limited.token;
  configHome = path.join(rig.work, 'config');
  env = { DROVER_URL: t.url, DROVER_TOKEN: token.token, XDG_CONFIG_HOME: configHome };
  await buildDrover();
}, 300_000);

afterAll(async () => {
  await stopDrover(running);
  await rig?.close();
});

/** Runs `drover` with the API token (and the session, once signed in); keeps the job ids for cleanup. */
async function run(args: string[], extraEnv: Record<string, string> = {}) {
  const res = await drover(args, { env: { ...env, ...extraEnv } });
  for (const id of res.stdout.match(/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []) {
    rig.jobIds.push(id);
  }
  return res;
}

const jobIdOf = (stdout: string) => /^Job ([0-9a-f-]{36}) /m.exec(stdout)?.[1] ?? '';

const openGate = (name: string) => fs.writeFileSync(path.join(rig.work, name), '');

describe('drover run with an API token', () => {
  it('exits 0 with the output of a sync trigger whose job succeeded', async () => {
    const res = await run(['run', triggers['greet-sync']!, '--wait', '--param', 'who=ops', '--param', 'times:=2']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const jobId = jobIdOf(res.stdout);
    expect(res.stdout).toBe(`Job ${jobId} succeeded\n${rig.t.url}/api/jobs/${jobId}\nOutput:\n  greeting: hi ops x2\n`);
  });

  it("prints the API's answer unchanged with --json, async and sync", async () => {
    const accepted = await run(['run', triggers.greet!, '--json']);
    expect(accepted.code).toBe(0);
    const body = JSON.parse(accepted.stdout);
    rig.jobIds.push(body.jobId);
    expect(body).toEqual({ jobId: expect.any(String), status: 'pending', statusUrl: `/api/jobs/${body.jobId}` });

    const done = await run(['run', triggers['greet-sync']!, '--wait', '--json', '--idempotency-key', 'build-7']);
    expect(done.code).toBe(0);
    const sync = JSON.parse(done.stdout);
    rig.jobIds.push(sync.jobId);
    expect(sync).toEqual({
      jobId: sync.jobId,
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { greeting: 'hi world x1' },
      statusUrl: `/api/jobs/${sync.jobId}`,
    });
    const again = await run(['run', triggers['greet-sync']!, '--wait', '--json', '--idempotency-key', 'build-7']);
    expect(JSON.parse(again.stdout)).toEqual({ ...sync, idempotent: true });
  });

  it('prints the job id and its page without --wait, and exits 0 once the run is accepted', async () => {
    const res = await run(['run', triggers['broken-sync']!]);
    expect(res.code).toBe(0);
    const jobId = jobIdOf(res.stdout);
    expect(res.stdout).toBe(`Job ${jobId} failed\n${rig.t.url}/api/jobs/${jobId}\n`);
  });

  it('exits 1 when the job fails, with its error', async () => {
    const res = await run(['run', triggers['broken-sync']!, '--wait']);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/^Job [0-9a-f-]{36} failed \(exit code 3\): .+\n/);
  });

  it('exits 4 when the job times out', async () => {
    const res = await run(['run', triggers['hang-sync']!, '--wait']);
    expect(res.code).toBe(4);
    expect(res.stdout).toMatch(/^Job [0-9a-f-]{36} timed out/);
  });

  it("exits 6 when a sync trigger's wait ends before the job", async () => {
    const res = await run(['run', triggers['gated-sync']!, '--wait', '--param', 'gate=sync-gate']);
    openGate('sync-gate');
    expect(res.code).toBe(6);
    expect(res.stdout).toMatch(/^Job [0-9a-f-]{36} is still (pending|queued|running): the trigger's wait ended/);
  });

  it('says that the job may still run, and how to get it back, when a sync run is interrupted (Ctrl-C, SIGTERM)', async () => {
    const { t, a } = rig;
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'gated-sync-long',
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: 'gated',
        responseMode: 'sync',
        responseTimeoutMs: 60_000,
      },
    });
    expect(res.status, res.text).toBe(201);
    const token = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [res.body.id] }]);
    const args = ['run', res.body.id, '--wait', '--param', 'gate=interrupted-gate', '--idempotency-key', 'ci-42'];
    const waiting = spawnDrover(args, { env: { ...env, DROVER_TOKEN: token.token } });
    try {
      const jobId = await eventually(
        async () => {
          const jobs = (await t.owner.get(`/orgs/${t.orgId}/jobs?triggerId=${res.body.id}`)).body;
          return jobs[0]?.status === 'running' ? (jobs[0].id as string) : undefined;
        },
        20_000,
        'the running job',
      );
      rig.jobIds.push(jobId);
      waiting.child.kill('SIGTERM');
      const ended = await waiting.exited;
      expect(ended.code).toBe(130);
      expect(ended.stdout).toBe('');
      expect(ended.stderr).toBe(
        'drover: interrupted while the run waited for its answer: the job may have started and still run; ' +
          'run again with --idempotency-key ci-42 to get its answer, or find it with `drover jobs`\n',
      );
    } finally {
      openGate('interrupted-gate');
      await stopDrover(waiting);
    }
  });

  it('exits 3 when a rate limit rejects the run, with the API message', async () => {
    const first = await run(['run', triggers.greet!], { DROVER_TOKEN: limitedToken });
    expect(first.code).toBe(0);
    const second = await run(['run', triggers.greet!], { DROVER_TOKEN: limitedToken });
    expect(second).toMatchObject({ code: 3, stdout: '' });
    expect(second.stderr).toMatch(/^drover: API token rate limit exceeded for the (hour|day): [^\n]+\n$/);
  });

  it("exits 2 with the API's message for a bad token, an unknown trigger and an invalid param", async () => {
    const badToken = await run(['run', triggers.greet!], { DROVER_TOKEN: 'drv_not-a-real-token' });
    expect(badToken).toMatchObject({ code: 2, stdout: '' });
    expect(badToken.stderr).toMatch(/^drover: [^\n]*API token[^\n]*\n$/);

    const unknown = await run(['run', '0190c0de-0000-7000-8000-000000000000']);
    expect(unknown).toMatchObject({ code: 2, stdout: '', stderr: 'drover: Trigger not found\n' });

    const invalid = await run(['run', triggers.greet!, '--param', 'times=three']);
    expect(invalid).toMatchObject({ code: 2, stdout: '' });
    expect(invalid.stderr).toBe('drover: body.params.times: must be a number, got `three` (string)\n');

    const usage = await run(['run', triggers.greet!, '--param', 'times:=three']);
    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect(usage.stderr).toContain('--param times:= expects a JSON value');
  });

  it('says in one line that --wait on an async trigger needs a session, and exits 2', async () => {
    const res = await run(['run', triggers.greet!, '--wait']);
    expect(res.code).toBe(2);
    const jobId = jobIdOf(res.stdout);
    expect(res.stderr).toBe(
      `drover: --wait on an async trigger needs a session to follow the job (drover login); job ${jobId} keeps running\n`,
    );
  });

  it("lists the token's agents and workflows as tables, and as the API's answers with --json", async () => {
    const { t, a } = rig;
    const agents = await run(['agents', '--json']);
    expect(agents.code).toBe(0);
    // lastSeenAt moves with every ping of the agent's stream
    const settled = (list: Record<string, unknown>[]) => list.map((agent) => ({ ...agent, lastSeenAt: 'moves' }));
    const api = (await t.api.get('/agents', { token: env.DROVER_TOKEN })).body;
    expect(settled(JSON.parse(agents.stdout))).toEqual(settled(api));
    const table = await run(['agents']);
    expect(table.stdout).toMatch(
      new RegExp(`^ID +NAME +STATUS +LAST SEEN +HOSTNAME +OS +VERSION +LABELS\n${a.agentId} +daemon-test +connected `),
    );

    const workflows = await run(['workflows']);
    expect(workflows.code).toBe(0);
    expect(workflows.stdout.split('\n')[0]).toMatch(/^NAME +VERSION +PARAMS +AGENT +DESCRIPTION$/);
    expect(workflows.stdout).toMatch(/\ngreet +- +who:string times:number +daemon-test +-\n/);
    const wfJson = JSON.parse((await run(['workflows', '--json'])).stdout);
    expect(wfJson.map((w: { name: string }) => w.name)).toEqual(['broken', 'chatty', 'gated', 'greet', 'hang']);

    const token = JSON.parse((await run(['token', '--json'])).stdout);
    expect(Object.keys(token).sort()).toEqual(['expiresAt', 'name', 'rateLimit', 'scopes']);
  });
});

describe('drover with a session', () => {
  it('signs in with DROVER_PASSWORD and keeps the session in a file only its owner can read', async () => {
    const res = await run(['login', '--email', OWNER_EMAIL], { DROVER_PASSWORD: OWNER_PASSWORD });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      new RegExp(`^Signed in to ${rig.t.url} as ${OWNER_EMAIL} until .+\nOrganizations: acme \\(owner\\)\n$`),
    );
    const file = path.join(configHome, 'drover', 'session.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ url: rig.t.url, email: OWNER_EMAIL });
  });

  it("lists one agent's workflows with --agent, read by the coordinator for the organization", async () => {
    const other = await enrollTestAgent(rig.t.owner, rig.t.orgId, { hostname: 'other-edge' });
    expect((await other.putWorkflows([workflow('elsewhere')])).status).toBe(200);
    const mine = await run(['workflows', '--agent', 'daemon-test', '--json'], { DROVER_TOKEN: '' });
    expect(mine.code, mine.stderr).toBe(0);
    expect(JSON.parse(mine.stdout).map((w: { name: string }) => w.name)).toEqual([
      'broken',
      'chatty',
      'gated',
      'greet',
      'hang',
    ]);
    const theirs = await run(['workflows', '--agent', other.agentId], { DROVER_TOKEN: '' });
    expect(theirs.stdout).toMatch(/^NAME +VERSION +PARAMS +AGENT +DESCRIPTION\nelsewhere +.* other-edge +/);
    expect((await rig.t.owner.delete(`/orgs/${rig.t.orgId}/agents/${other.agentId}`)).status).toBe(200);
  });

  it('follows an async job to its end with --wait, its log lines with --logs', async () => {
    const res = await run(['run', triggers.greet!, '--wait', '--logs', '--param', 'who=session']);
    expect(res.code).toBe(0);
    const jobId = jobIdOf(res.stdout);
    expect(res.stdout).toMatch(
      new RegExp(
        `^Job ${jobId} pending\n.+\nJob ${jobId} succeeded in [\\d.]+s\nOutput:\n  greeting: hi session x1\n$`,
      ),
    );
    expect(res.stderr).toMatch(/^\d\d:\d\d:\d\d stdout {2}greeting session$/m);
    // What the job printed is shown, never obeyed: no control character reaches the terminal.
    expect(res.stderr).toMatch(/^\d\d:\d\d:\d\d stdout {2}sequences \\x1b\]52;c;aGk=\\x07 \\x1b\[2K$/m);
    expect(showControls(res.stderr)).toBe(res.stderr);

    const json = await run(['run', triggers.greet!, '--wait', '--json']);
    expect(json.code).toBe(0);
    const job = JSON.parse(json.stdout);
    rig.jobIds.push(job.id);
    expect(job).toMatchObject({ status: 'success', output: { greeting: 'hi world x1' }, logs: [] });
    expect(job).toEqual({ ...(await rig.t.owner.get(`/jobs/${job.id}`)).body, logs: [] });

    const followed = await run(['job', job.id, '--follow']);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/\n\d\d:\d\d:\d\d stdout {2}greeting world\n(.+\n)*Job \S+ succeeded in /);
  });

  it('prints every line of a log longer than a page, in order, following it and after it ended', async () => {
    const expected = Array.from({ length: 12_000 }, (_, i) => `line ${i + 1} ${PAD}`);
    const stdoutLines = (out: string) => [...out.matchAll(/^\d\d:\d\d:\d\d stdout {2}(.*)$/gm)].map((m) => m[1]);
    const waited = await run(['run', triggers.chatty!, '--wait', '--logs']);
    expect(waited.code).toBe(0);
    const jobId = jobIdOf(waited.stdout);
    expect(stdoutLines(waited.stderr)).toEqual(expected);
    const followed = await run(['job', jobId, '--follow']);
    expect(followed.code).toBe(0);
    expect(stdoutLines(followed.stdout)).toEqual(expected);
    const shown = await run(['job', jobId, '--logs']);
    expect(shown.stdout).toMatch(/\nLog: +12,00\d lines\n/);
    expect(stdoutLines(shown.stdout)).toEqual(expected);
  });

  it('exits 5 when the job it waits for is cancelled, and 6 when --wait-timeout passes first', async () => {
    running = spawnDrover(['run', triggers.gated!, '--wait', '--param', 'gate=never'], { env });
    const jobId = await eventually(() => jobIdOf(running!.output().stdout) || undefined, 20_000, 'the job id');
    rig.jobIds.push(jobId);
    await eventually(
      async () => (await rig.t.owner.get(`/jobs/${jobId}`)).body.status === 'running',
      20_000,
      'running',
    );

    const timedOut = await run(['run', triggers.gated!, '--wait', '--wait-timeout', '1s', '--param', 'gate=later']);
    expect(timedOut.code).toBe(6);
    expect(timedOut.stdout).toMatch(/Job [0-9a-f-]{36} is still (pending|queued): the wait timed out\n$/);

    const cancel = await run(['cancel', jobId]);
    expect(cancel).toMatchObject({
      code: 0,
      stdout: `Asked the agent to stop job ${jobId}; it is cancelled once the agent confirms\n`,
    });
    const waited = await running.exited;
    expect(waited.code).toBe(5);
    expect(waited.stdout).toContain(`Job ${jobId} was cancelled: a user cancelled the job`);
    expect(waited.stdout).not.toContain('cancelled: cancelled');
    openGate('later');
  });

  it("lists the organization's jobs, shows one with its log lines, and --json gives the API's answers", async () => {
    const { t } = rig;
    const listed = await run(['jobs', '--limit', '5', '--json']);
    expect(listed.code).toBe(0);
    const expected = (await t.owner.get(`/orgs/${t.orgId}/jobs?limit=5`)).body;
    expect(JSON.parse(listed.stdout).map((j: { id: string }) => j.id)).toEqual(
      expected.map((j: { id: string }) => j.id),
    );
    const table = await run(['jobs', '--status', 'success']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +NUMBER +STATUS +WORKFLOW +SOURCE +REF +CREATED +TOOK$/);
    // Page after page: the next page's command is said on stderr, as the API's cursor gives it.
    const first = await run(['jobs', '--limit', '2', '--source', 'webhook', '--json']);
    const next = /^More jobs follow: drover jobs --source webhook --limit 2 --cursor (\S+)$/m.exec(first.stderr);
    expect(next, first.stderr).not.toBeNull();
    const second = await run(['jobs', '--limit', '2', '--source', 'webhook', '--cursor', next![1]!, '--json']);
    const api = await t.owner.get(`/orgs/${t.orgId}/jobs?limit=2&source=webhook&cursor=${next![1]}`);
    expect(JSON.parse(second.stdout).map((j: { id: string }) => j.id)).toEqual(
      api.body.map((j: { id: string }) => j.id),
    );
    const agentId = expected[0].agentId as string;
    const ofAgent = await run(['jobs', '--agent', agentId, '--json']);
    expect(JSON.parse(ofAgent.stdout).length).toBeGreaterThan(0);
    expect(JSON.parse(ofAgent.stdout).every((j: { agentId: string }) => j.agentId === agentId)).toBe(true);
    expect(await run(['jobs', '--source', 'ota'])).toMatchObject({ code: 2 });

    const jobId = expected.find((j: { status: string }) => j.status === 'success').id;
    const shown = await run(['job', jobId, '--logs']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^Job: +${jobId} \\(#\\d+\\)\nStatus: +success\n`));
    expect(shown.stdout).toMatch(/\nLogs:\n(.+\n)*\d\d:\d\d:\d\d system {2}job finished: success\n/);
    const json = JSON.parse((await run(['job', jobId, '--json'])).stdout);
    expect(json).toEqual((await t.owner.get(`/jobs/${jobId}`)).body);
  });

  it('watches the job list: a new job is a line, and Ctrl-C ends it with 0', async () => {
    const watch = spawnDrover(['jobs', '--watch', '--limit', '3'], { env });
    try {
      await eventually(() => watch.output().stdout.split('\n').length > 2, 20_000, 'the first lines');
      const res = await run(['run', triggers.greet!, '--json']);
      const jobId = JSON.parse(res.stdout).jobId;
      await eventually(() => watch.output().stdout.includes(`${jobId} success greet`), 20_000, 'the new job');
      watch.child.kill('SIGINT');
      expect((await watch.exited).code).toBe(0);
    } finally {
      await stopDrover(watch);
    }
  });

  it('signs out: the session ends on the coordinator and its file is deleted', async () => {
    const file = path.join(configHome, 'drover', 'session.json');
    const { token } = JSON.parse(fs.readFileSync(file, 'utf8'));
    const res = await run(['logout']);
    expect(res).toMatchObject({ code: 0, stdout: `Signed out of ${rig.t.url}\n` });
    expect(fs.existsSync(file)).toBe(false);
    expect((await rig.t.api.get(`/orgs`, { token })).status).toBe(401);
    const after = await run(['jobs']);
    expect(after).toMatchObject({
      code: 2,
      stderr:
        'drover: this command needs a session: sign in with `drover login --email <email>` or `drover login --browser`\n',
    });
  });
});
