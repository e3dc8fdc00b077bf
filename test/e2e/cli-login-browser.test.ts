import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CLI_VERSION } from '../../cli/src/version.js';
import { buildDrover, drover, spawnDrover, stopDrover, type DroverProcess } from '../helpers/cli-binary.js';
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';

/**
 * `drover login --browser` (device sign-in, docs/cli.md) with the built single executable against
 * a real coordinator: the page and the code it prints, approved or denied over HTTP by a signed-in
 * user as the dashboard's page does, the session it keeps, Ctrl-C, an expired code (the
 * coordinator's clock moved on), and a password sign-in refused when passwords are off. Each
 * approval or denial waits for one poll interval (5 s, the coordinator's): the tests run at once.
 */

let t: TestCoordinator;
/** Passwords off (single sign-on only), its clock `shift` ms ahead of the real one. */
let off: TestCoordinator;
let shift = 0;
let work: string;
const running: DroverProcess[] = [];

beforeAll(async () => {
  work = makeTempDir('drover-cli-login-browser-');
  [t, off] = await Promise.all([
    startTestCoordinator(),
    startTestCoordinator({
      env: {
        DROVER_PASSWORD_LOGIN: 'off',
        // Never reached: no test here signs in with single sign-on.
        DROVER_OIDC_ISSUER: 'http://127.0.0.1:9/',
        DROVER_OIDC_CLIENT_ID: 'drover',
      },
      clock: { now: () => Date.now() + shift },
    }),
    buildDrover(),
  ]);
}, 300_000);

afterAll(async () => {
  await Promise.all(running.map(stopDrover));
  await Promise.all([t?.close(), off?.close()]);
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Its own configuration directory for each run, so that runs at once keep their sessions apart. */
function environment(name: string, coordinator = t): Record<string, string> {
  return { DROVER_URL: coordinator.url, XDG_CONFIG_HOME: path.join(work, name) };
}

const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

/** Starts `drover login --browser` and waits for the page and the code it prints. */
async function startBrowserLogin(env: Record<string, string>, coordinator = t) {
  const run = spawnDrover(['login', '--browser'], { env });
  running.push(run);
  const [, page, code, expiresAt] = await eventually(
    () =>
      run
        .output()
        .stderr.match(
          /^Sign in at (\S+)\nOpen it in a browser where you are signed in to Drover \(single sign-on or password\), check that the page shows the code (\S+) and approve; it expires at (\S+)\.\nWaiting for the approval \(Ctrl-C to stop\)\.\.\.\n$/,
        ),
    10_000,
    () => `the page and the code; output: ${JSON.stringify(run.output())}`,
  );
  return {
    run,
    page: page!,
    code: code!,
    expiresAt: expiresAt!,
    publicUrl: coordinator.coordinator.ctx.config.publicUrl,
  };
}

describe.concurrent('drover login --browser', () => {
  it('prints the page and the code; once approved by a signed-in user, keeps a session that works', async ({
    expect,
  }) => {
    const env = environment('approved');
    const started = Date.now();
    const { run, page, code, expiresAt, publicUrl } = await startBrowserLogin(env);
    expect(code).toMatch(USER_CODE);
    expect(page).toBe(`${publicUrl}/device?code=${code}`);
    expect(Date.parse(expiresAt) - started).toBeGreaterThan(9 * 60_000);
    expect(Date.parse(expiresAt) - started).toBeLessThanOrEqual(10 * 60_000 + 5_000);

    // What the approval page shows, then the approval, as a user signed in with a password.
    const approver = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    const shown = await approver.get(`/auth/device/${code}`);
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body).toMatchObject({
      userCode: code,
      status: 'pending',
      client: `drover ${CLI_VERSION} on ${os.hostname()}`,
    });
    const approved = await approver.post(`/auth/device/${code}/approve`);
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.status).toBe('approved');

    const end = await run.exited;
    expect(end.code, end.stderr).toBe(0);
    expect(end.stdout).toMatch(
      new RegExp(`^Signed in to ${t.url} as ${OWNER_EMAIL} until \\S+\nOrganizations: acme \\(owner\\)\n$`),
    );
    const file = path.join(env.XDG_CONFIG_HOME!, 'drover', 'session.json');
    expect(end.stderr.endsWith(`The session is kept in ${file}\n`)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const session = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(Object.keys(session).sort()).toEqual(['clockOffsetMs', 'email', 'expiresAt', 'token', 'url', 'userId']);
    expect(session).toMatchObject({ url: t.url, email: OWNER_EMAIL });
    expect(session.token, 'a session of its own, not the approving one').not.toBe(approver.token);

    const jobs = await drover(['jobs', '--json'], { env });
    expect(jobs.code, jobs.stderr).toBe(0);
    expect(JSON.parse(jobs.stdout)).toEqual([]);
  });

  it('exits 2 saying so when the sign-in is denied in the browser, and keeps no session', async ({ expect }) => {
    const env = environment('denied');
    const { run, code } = await startBrowserLogin(env);
    const approver = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    const denied = await approver.post(`/auth/device/${code}/deny`);
    expect(denied.status, denied.text).toBe(200);
    const end = await run.exited;
    expect(end.code).toBe(2);
    expect(end.stdout).toBe('');
    expect(end.stderr.endsWith('\ndrover: the sign-in was denied in the browser\n')).toBe(true);
    expect(fs.existsSync(path.join(env.XDG_CONFIG_HOME!, 'drover', 'session.json'))).toBe(false);
  });

  it('exits 2 saying to start again when nobody approved within 10 minutes', async ({ expect }) => {
    const env = environment('expired', off);
    const { run } = await startBrowserLogin(env, off);
    shift = 10 * 60_000 + 1_000;
    const end = await run.exited;
    expect(end.code).toBe(2);
    expect(end.stderr.endsWith('\ndrover: no approval within 10 minutes: run `drover login --browser` again\n')).toBe(
      true,
    );
  });

  it('stops at once on Ctrl-C', async ({ expect }) => {
    const { run } = await startBrowserLogin(environment('interrupted'));
    const at = Date.now();
    run.child.kill('SIGINT');
    const end = await run.exited;
    expect(end.code).toBe(130);
    expect(end.stderr.endsWith('\ndrover: interrupted\n')).toBe(true);
    expect(Date.now() - at).toBeLessThan(2_000);
  });

  it('refuses --email and --password-stdin with --browser before any request', async ({ expect }) => {
    const env = { DROVER_URL: 'http://127.0.0.1:1', XDG_CONFIG_HOME: path.join(work, 'usage') };
    for (const extra of [['--email', 'x@example.test'], ['--password-stdin']]) {
      const res = await drover(['login', '--browser', ...extra], { env });
      expect(res).toEqual({
        code: 2,
        stdout: '',
        stderr: 'drover: --browser takes no --email or --password-stdin: you sign in in the browser\n',
      });
    }
  });

  it('names `drover login --browser` when the coordinator has password sign-in off', async ({ expect }) => {
    const res = await drover(['login', '--email', OWNER_EMAIL, '--password-stdin'], {
      env: environment('passwords-off', off),
      input: `${OWNER_PASSWORD}\n`,
    });
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr: `drover: password sign-in is turned off on ${off.url}: sign in through the browser with \`drover login --browser\`\n`,
    });
  });
});
