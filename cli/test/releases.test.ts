import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { releaseSignedBy, rotationProblem } from '@drover/shared';
import { runCli } from '../src/program.js';
import { formatRolloutStatus, type Rollout } from '../src/releases/format-rollout.js';
import { rolloutPlan } from '../src/releases/rollout-plan.js';
import { fakeCoordinator, type FakeCoordinator, type FakeRoute } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';
import { signedInHome } from './signed-in.js';

const ORG = '5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4';
const APP = '0d6f3b2a-1c4e-4f5a-9b8c-7d6e5f4a3b2c';
const RELEASE = '019ac3e2-6b1f-7c4e-9d2a-3f5b6c7d8e9f';
const ME = '3f0c1d52-0000-4000-8000-000000000000';
const BASE = `/v1/orgs/${ORG}/apps/${APP}/releases`;

const release = (status: string) => ({
  id: RELEASE,
  applicationId: APP,
  version: '1.4.0',
  sequence: 7,
  channel: 'stable',
  updatePolicy: 'optional',
  status,
  artifactFileId: '8b3e4d0a-6f5c-4b7d-9e9f-2a3b4c5d6e7f',
  checksumSha256: 'a'.repeat(64),
  size: 12,
  notes: null,
  createdAt: '2026-11-28T09:00:00.000Z',
  publishedAt: status === 'draft' ? null : '2026-11-28T09:30:00.000Z',
  yankedAt: null,
});

const wave = (
  percent: number,
  devices: number,
  s: number,
  f: number,
  p: number,
  started: string | null,
  ended: string | null,
) => ({
  percent,
  devices,
  succeeded: s,
  failed: f,
  pending: p,
  startedAt: started,
  endedAt: ended,
});

const rollout = (more: Partial<Rollout> = {}): Rollout => ({
  releaseId: RELEASE,
  applicationId: APP,
  channel: 'stable',
  status: 'running',
  currentWave: 1,
  deviceCount: 200,
  soakSeconds: 600,
  maxFailureRate: 0.05,
  minAttempts: 3,
  waves: [
    wave(1, 2, 2, 0, 0, '2026-11-28T09:30:00.000Z', '2026-11-28T09:31:00.000Z'),
    wave(10, 20, 5, 1, 12, '2026-11-28T09:41:00.000Z', null),
    wave(100, 200, 0, 0, 180, null, null),
  ],
  pausedReason: null,
  soakEndsAt: null,
  history: [
    { at: '2026-11-28T09:30:00.000Z', event: 'start', by: ME, detail: null },
    {
      at: '2026-11-28T09:31:00.000Z',
      event: 'wave_end',
      by: 'system',
      detail: 'wave 1: every update ended (2 succeeded, 0 failed); soak of 600 s',
    },
    { at: '2026-11-28T09:41:00.000Z', event: 'advance', by: 'system', detail: 'wave 2 of 3' },
  ],
  createdAt: '2026-11-28T09:30:00.000Z',
  endedAt: null,
  ...more,
});

describe('the rollout options of release publish', () => {
  it('make the plan: waves as percentages, the soak in seconds (0 allowed), the rate and the attempts', () => {
    expect(rolloutPlan({})).toBeNull();
    expect(rolloutPlan({ waves: '1, 10,50%,100', soak: '10m', maxFailureRate: '0.05' })).toEqual({
      waves: [1, 10, 50, 100],
      soakSeconds: 600,
      maxFailureRate: 0.05,
    });
    expect(rolloutPlan({ waves: '0.5,100', soak: '0', maxFailureRate: '0', minAttempts: '3' })).toEqual({
      waves: [0.5, 100],
      soakSeconds: 0,
      maxFailureRate: 0,
      minAttempts: 3,
    });
    expect(rolloutPlan({ waves: '100', soak: '1h30m', maxFailureRate: '1' })?.soakSeconds).toBe(5400);
    // Ranges and order are the coordinator's rule (its 422): a number is passed on as it is.
    expect(rolloutPlan({ waves: '50,10', soak: '2h', maxFailureRate: '2' })).toEqual({
      waves: [50, 10],
      soakSeconds: 7200,
      maxFailureRate: 2,
    });
  });

  it('refuse what is not a number, a bad soak, and options that need one another, saying what was got', () => {
    const refusal = (flags: Parameters<typeof rolloutPlan>[0]) => {
      try {
        rolloutPlan(flags);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    const plan = { soak: '0', maxFailureRate: '0.05' };
    expect(refusal({ ...plan, waves: '1,ten,100' })).toBe(
      '--waves: expected percentages separated by commas, such as 1,10,50,100, got `1,ten,100` (`ten` is not a number)',
    );
    expect(refusal({ ...plan, waves: '1,,100' })).toMatch(/^--waves: .*\(`` is not a number\)$/);
    expect(refusal({ ...plan, waves: '100', maxFailureRate: '5%' })).toBe(
      '--max-failure-rate: expected a number from 0 to 1 (0.05: more than 5% failed pauses), got `5%`',
    );
    expect(refusal({ ...plan, waves: '100', soak: 'soon' })).toBe(
      '--soak: expected a duration such as 30s, 5m, 2h or 1d, got `soon`',
    );
    expect(refusal({ ...plan, waves: '100', soak: '1.5s' })).toBe('--soak: expected whole seconds, got `1.5s`');
    expect(refusal({ ...plan, waves: '100', minAttempts: '2.5' })).toBe(
      '--min-attempts: expected a whole number, got `2.5`',
    );
    expect(refusal({ waves: '100' })).toBe(
      '--waves needs --soak and --max-failure-rate (e.g. --soak 10m --max-failure-rate 0.05)',
    );
    expect(refusal({ waves: '100', soak: '0' })).toBe(
      '--waves needs --max-failure-rate (e.g. --soak 10m --max-failure-rate 0.05)',
    );
    expect(refusal({ soak: '10m', maxFailureRate: '0.05' })).toBe(
      '--soak and --max-failure-rate need --waves (a staged rollout); without --waves the release is published to every device at once',
    );
    expect(refusal({ minAttempts: '3' })).toMatch(/^--min-attempts needs --waves /);
  });
});

describe('drover rollout status', () => {
  it('shows the state and plan, a row per wave (cumulative devices, the new ones and their updates), and the history', () => {
    const text = formatRolloutStatus(
      rollout({ soakEndsAt: null }),
      { version: '1.4.0', sequence: 7 },
      { userId: ME, email: 'ops@example.com' },
    );
    expect(text.split('\n')).toEqual([
      'Release:    1.4.0 (#7) on channel stable',
      'Status:     running, wave 2 of 3 (10%)',
      "Devices:    200 (the channel's when it was published)",
      'Waves:      1%, 10%, 100%',
      'Soak:       10m after each wave but the last',
      "Threshold:  pauses when more than 5% of a wave's ended updates failed (judged once 3 ended)",
      'Started:    2026-11-28 09:30:00Z',
      '',
      'WAVE  PERCENT  DEVICES  NEW  SUCCEEDED  FAILED  PENDING  STARTED               ENDED',
      '1     1%       2        2    2          0       0        2026-11-28 09:30:00Z  2026-11-28 09:31:00Z',
      '2     10%      20       18   5          1       12       2026-11-28 09:41:00Z  -',
      '3     100%     200      180  0          0       180      -                     -',
      '',
      'History:',
      'AT                    EVENT     BY               DETAIL',
      '2026-11-28 09:30:00Z  start     ops@example.com  -',
      '2026-11-28 09:31:00Z  wave_end  system           wave 1: every update ended (2 succeeded, 0 failed); soak of 600 s',
      '2026-11-28 09:41:00Z  advance   system           wave 2 of 3',
      '',
    ]);
  });

  it('says why a rollout paused, when its soak ends, and when it ended', () => {
    const now = Date.parse('2026-11-28T09:45:00.000Z');
    const me = { userId: ME, email: 'ops@example.com' };
    const paused = formatRolloutStatus(
      rollout({ status: 'paused', pausedReason: 'failure_threshold', currentWave: 0, soakSeconds: 5400 }),
      { version: '1.4.0', sequence: 7 },
      me,
      now,
    );
    expect(paused).toContain('Status:     paused by the failure threshold in wave 1 of 3 (1%)\n');
    expect(paused).toContain('Soak:       1h30m after each wave but the last\n');
    const soaking = formatRolloutStatus(
      rollout({ soakEndsAt: '2026-11-28T09:47:00.000Z', soakSeconds: 0, minAttempts: 1 }),
      { version: '1.4.0', sequence: 7 },
      me,
      now,
    );
    expect(soaking).toContain('Soak:       none\n');
    expect(soaking).toContain("pauses when more than 5% of a wave's ended updates failed\n");
    expect(soaking).toContain('Soak ends:  2026-11-28 09:47:00Z (in 2m)\n');
    const done = formatRolloutStatus(
      rollout({ status: 'completed', endedAt: '2026-11-28T10:00:00.000Z' }),
      { version: '1.4.0', sequence: 7 },
      me,
      now,
    );
    expect(done).toContain('Status:     completed\n');
    expect(done).toContain('Ended:      2026-11-28 10:00:00Z\n');
  });
});

describe('drover release publish --waves and drover rollout against a coordinator', () => {
  let api: FakeCoordinator | undefined;
  let configHome: string | undefined;
  afterEach(async () => {
    await api?.close();
    if (configHome) fs.rmSync(configHome, { recursive: true, force: true });
  });

  const start = async (routes: Record<string, FakeRoute>) => {
    api = await fakeCoordinator({
      [`GET /v1/orgs/${ORG}/apps`]: [200, [{ id: APP, slug: 'fw' }]],
      [`GET ${BASE}`]: [200, [release('draft')]],
      ...routes,
    });
    configHome = signedInHome(api.url, ME);
    return { XDG_CONFIG_HOME: configHome, DROVER_ORG: ORG };
  };
  const cli = async (args: string[], env: Record<string, string>) => {
    const rt = testRuntime({ env });
    const code = await runCli(args, rt);
    return { code, stdout: rt.stdout(), stderr: rt.stderr() };
  };

  it('checks the options before any call', async () => {
    const env = await start({});
    for (const args of [
      ['--waves', '1,x,100', '--soak', '0', '--max-failure-rate', '0.1'],
      ['--waves', '1,10,100', '--soak', '0', '--max-failure-rate', 'low'],
      ['--soak', '10m'],
      ['--waves', '1,10,100'],
    ]) {
      const res = await cli(['release', 'publish', '1.4.0', '--app', 'fw', ...args], env);
      expect(res.code, res.stderr).toBe(2);
      expect(res.stderr).toMatch(/^drover: --\S+ /);
    }
    const create = await cli(['release', 'create', '1.5', '--app', 'fw', '--file', RELEASE, '--waves', '100'], env);
    expect(create).toMatchObject({ code: 2, stderr: expect.stringMatching(/^drover: --waves needs --soak/) });
    const notPublished = await cli(
      [
        'release',
        'create',
        '1.5',
        '--app',
        'fw',
        '--file',
        RELEASE,
        '--waves',
        '100',
        '--soak',
        '0',
        '--max-failure-rate',
        '0',
      ],
      env,
    );
    expect(notPublished).toMatchObject({
      code: 2,
      stderr: 'drover: --waves needs --publish (a draft has no rollout yet)\n',
    });
    for (const wave of ['0', '-1', '1.5', 'two', '']) {
      expect(await cli(['rollout', 'advance', '1.4.0', '--app', 'fw', '--wave', wave], env)).toEqual({
        code: 2,
        stdout: '',
        stderr: `drover: --wave: expected a wave number from 1 (wave 2 of 3: --wave 2), got \`${wave}\`\n`,
      });
    }
    expect(api!.calls).toEqual([]);
  });

  it("names the options in the coordinator's 422 on the plan", async () => {
    const details = [
      { path: 'body.rollout.waves.1', message: 'expected waves in increasing order, got 10 after 50' },
      { path: 'body.rollout.waves', message: 'expected the last wave to be 100 (every device), got 10' },
      { path: 'body.rollout.maxFailureRate', message: 'expected a rate from 0 to 1, got 2' },
    ];
    const env = await start({
      [`POST ${BASE}/${RELEASE}/publish`]: [
        422,
        {
          statusCode: 422,
          code: 'validation_failed',
          message: details.map((d) => `${d.path}: ${d.message}`).join('; '),
          details,
        },
      ],
    });
    const res = await cli(
      ['release', 'publish', '1.4.0', '--app', 'fw', '--waves', '50,10', '--soak', '0', '--max-failure-rate', '2'],
      env,
    );
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'drover: --waves: wave 2: expected waves in increasing order, got 10 after 50; ' +
        '--waves: expected the last wave to be 100 (every device), got 10; ' +
        '--max-failure-rate: expected a rate from 0 to 1, got 2\n',
    });
  });

  it('publishes wave by wave and says where the rollout stands; shows it, and prints a 409 with exit 2', async () => {
    const env = await start({
      [`POST ${BASE}`]: [201, release('draft')],
      [`POST ${BASE}/${RELEASE}/publish`]: [200, release('published')],
      [`GET ${BASE}/${RELEASE}`]: [200, release('published')],
      [`GET ${BASE}/${RELEASE}/rollout`]: [200, rollout({ currentWave: 0 })],
      [`POST ${BASE}/${RELEASE}/rollout/pause`]: [200, rollout({ status: 'paused', pausedReason: 'operator' })],
      [`POST ${BASE}/${RELEASE}/rollout/resume`]: [
        409,
        {
          statusCode: 409,
          code: 'conflict',
          message: 'Cannot resume a rollout that is completed; resume applies to a rollout that is paused',
          details: { status: 'completed' },
        },
      ],
    });
    const published = await cli(
      [
        'release',
        'publish',
        '1.4.0',
        '--app',
        'fw',
        '--waves',
        '1,10,100',
        '--soak',
        '10m',
        '--max-failure-rate',
        '0.05',
      ],
      env,
    );
    expect(published).toEqual({
      code: 0,
      stdout:
        'Release 1.4.0 (#7, optional) on channel stable: published\n' +
        'Rollout of 1.4.0 on channel stable: running, wave 1 of 3 (1%): 2 of 200 devices\n',
      stderr: 'Follow it with: drover rollout status 1.4.0 --app fw\n',
    });

    const status = await cli(['rollout', 'status', RELEASE, '--app', 'fw'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      /^Release: +1\.4\.0 \(#7\) on channel stable\nStatus: +running, wave 1 of 3 \(1%\)\n/,
    );
    const json = await cli(['rollout', 'status', '1.4.0', '--app', 'fw', '--json'], env);
    expect(JSON.parse(json.stdout)).toEqual(rollout({ currentWave: 0 }));

    expect(await cli(['rollout', 'pause', '1.4.0', '--app', 'fw'], env)).toEqual({
      code: 0,
      stdout: 'Rollout of 1.4.0 on channel stable: paused by an operator in wave 2 of 3 (10%): 20 of 200 devices\n',
      stderr: '',
    });
    expect(await cli(['rollout', 'resume', '1.4.0', '--app', 'fw'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr: 'drover: Cannot resume a rollout that is completed; resume applies to a rollout that is paused\n',
    });
    // release create --publish takes the same options: the new release's id alone on stdout.
    const created = await cli(
      [
        'release',
        'create',
        '1.4.0',
        '--app',
        'fw',
        '--file',
        RELEASE,
        '--publish',
        '--waves',
        '1,10,100',
        '--soak',
        '0',
        '--max-failure-rate',
        '0',
      ],
      env,
    );
    expect(created).toEqual({
      code: 0,
      stdout: `${RELEASE}\n`,
      stderr:
        'Release 1.4.0 (#7, optional) on channel stable: published\n' +
        'Rollout of 1.4.0 on channel stable: running, wave 1 of 3 (1%): 2 of 200 devices\n' +
        `Follow it with: drover rollout status ${RELEASE} --app fw\n`,
    });
    const unknown = await cli(['rollout', 'status', '2.0', '--app', 'fw'], env);
    expect(unknown).toMatchObject({ code: 2, stderr: 'drover: no release `2.0` in the organization\n' });
  });
});

describe('drover release keygen, sign and rotate-keys (offline)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-release-keys-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cli = async (args: string[]) => {
    const rt = testRuntime();
    const code = await runCli(args, rt);
    return { code, stdout: rt.stdout(), stderr: rt.stderr() };
  };

  it('makes a key pair (private key 0600, never overwritten) whose signatures the coordinator’s check accepts', async () => {
    const keyFile = path.join(dir, 'release.key');
    const made = await cli(['release', 'keygen', '--out', keyFile]);
    expect(made.code, made.stderr).toBe(0);
    const publicKey = made.stdout.trim();
    expect(publicKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(made.stderr).toContain(`drover app release-keys <app> --key ${publicKey}`);
    expect(await cli(['release', 'keygen', '--out', keyFile])).toMatchObject({
      code: 2,
      stderr: `drover: ${keyFile} exists already: choose another file (a key is never overwritten)\n`,
    });

    const artifact = path.join(dir, 'fw-1.5.bin');
    fs.writeFileSync(artifact, 'firmware 1.5');
    const sha256 = createHash('sha256').update('firmware 1.5').digest('hex');
    const fromFile = await cli([
      'release',
      'sign',
      '--key',
      keyFile,
      '1.5',
      '--app',
      'fw',
      '--sequence',
      '8',
      '--file',
      artifact,
    ]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const given = await cli([
      'release',
      'sign',
      '--key',
      keyFile,
      '1.5',
      '--app',
      'fw',
      '--sequence',
      '8',
      '--sha256',
      sha256.toUpperCase(),
      '--size',
      '12',
    ]);
    expect(given.stdout).toBe(fromFile.stdout); // Ed25519 is deterministic: the same fields, the same signature
    const fields = { app: 'fw', version: '1.5', sequence: 8, sha256, size: 12 };
    expect(releaseSignedBy(fields, fromFile.stdout.trim(), [publicKey])).toBe(publicKey);
    expect(releaseSignedBy({ ...fields, sequence: 9 }, fromFile.stdout.trim(), [publicKey])).toBeNull();

    expect(await cli(['release', 'sign', '1.5', '--key', keyFile, '--app', 'fw', '--sequence', '8'])).toMatchObject({
      code: 2,
      stderr: 'drover: give the artifact with --file <path>, or with --sha256 <hex> and --size <bytes>\n',
    });
    fs.writeFileSync(path.join(dir, 'junk.key'), 'not a key\n');
    expect(
      await cli([
        'release',
        'sign',
        '--key',
        path.join(dir, 'junk.key'),
        '--app',
        'fw',
        '1',
        '--sequence',
        '1',
        '--file',
        artifact,
      ]),
    ).toMatchObject({ code: 2, stderr: expect.stringContaining('is not a release key: expected one line') });
    expect(
      await cli(['release', 'sign', '--key', '/dev/zero', '--app', 'fw', '1', '--sequence', '1', '--file', artifact]),
    ).toMatchObject({
      code: 2,
      stderr: 'drover: the key file: cannot read /dev/zero: it is a device, not a regular file (EINVAL): remove it\n',
    });
  });

  it('reads a rotation statement of at most 1 MiB, from a file or standard input', async () => {
    const stdin = new PassThrough();
    const rt = testRuntime({ stdin });
    stdin.end(Buffer.alloc(1024 * 1024 + 1, 0x20));
    expect(await runCli(['app', 'release-keys', 'fw', '--rotation', '-'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: the rotation: standard input holds more than 1048576 bytes\n');
    expect(await cli(['app', 'release-keys', 'fw', '--rotation', '/dev/zero'])).toMatchObject({
      code: 2,
      stderr: 'drover: the rotation: cannot read /dev/zero: it is a device, not a regular file (EINVAL): remove it\n',
    });
  });

  it('signs a rotation to a new key set with a key of the current one', async () => {
    const oldKey = path.join(dir, 'old.key');
    const newKey = path.join(dir, 'new.key');
    const oldPublic = (await cli(['release', 'keygen', '--out', oldKey])).stdout.trim();
    const newPublic = (await cli(['release', 'keygen', '--out', newKey])).stdout.trim();
    const res = await cli([
      'release',
      'rotate-keys',
      '--key',
      oldKey,
      '--app',
      'fw',
      '--generation',
      '1',
      '--new-key',
      oldPublic,
      '--new-key',
      newPublic,
    ]);
    expect(res.code, res.stderr).toBe(0);
    const rotation = JSON.parse(res.stdout);
    expect(rotation).toMatchObject({
      app: 'fw',
      generation: 1,
      keys: [oldPublic, newPublic].sort(),
      signedBy: oldPublic,
    });
    expect(rotationProblem(rotation, 'fw', [oldPublic], 0)).toBeNull();
    expect(rotationProblem(rotation, 'fw', [newPublic], 0)).toBe(
      'is not signed by a key of the current set (signedBy must be one of them)',
    );
    expect(rotationProblem(rotation, 'fw', [oldPublic], 1)).toMatch(/^has generation 1, expected more than 1/);
  });
});
