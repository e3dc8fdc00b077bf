import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generateEd25519KeyPair } from '@drover/shared';
import { saveEnrollment, savePrivateKey } from '../../src/state/enrollment.js';
import { crashHandler, SELF_UPDATE_ENV, selfUpdateFromEnv, selfUpdateSetting } from '../../src/cli/run-command.js';
import { acquireDaemonLock } from '../../src/daemon/lock.js';
import { markerPath, readMarker, writeMarker } from '../../src/self-update/marker.js';
import { AGENT_VERSION } from '../../src/version.js';
import { runAgentCli as run } from './run-cli.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-cli-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const enrollment = {
  url: 'https://drover.example.com',
  agentId: '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d',
  orgId: '0b7d7c2e-1111-4222-8333-444455556666',
  serverPublicKey: generateEd25519KeyPair().publicKey,
  enrolledAt: '2026-01-02T03:04:05.000Z',
};

describe('drover-agent status', () => {
  it('says plainly that nothing is enrolled, and exits 1', async () => {
    const res = await run('status', '--state-dir', path.join(root, 'none'));
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/Enrolled: +no/);
    expect(res.out).toMatch(/drover-agent enroll --url/);
  });

  it('shows the enrollment, the key fingerprints and that the agent is not running', async () => {
    savePrivateKey(root, generateEd25519KeyPair().privateKey);
    saveEnrollment(root, enrollment);
    const res = await run('status', '--state-dir', root);
    expect(res.code).toBe(0);
    expect(res.out).toContain(enrollment.agentId);
    expect(res.out).toContain(enrollment.orgId);
    expect(res.out).toContain(enrollment.url);
    expect(res.out).toMatch(/Server key: +SHA256:[A-Za-z0-9+/]{43}/);
    expect(res.out).toMatch(/Agent: +not running/);
    const json = await run('status', '--state-dir', root, '--json');
    expect(JSON.parse(json.out)).toMatchObject({ enrollment, running: false, problem: null });
  });

  it('shows a self-update in flight, on trial or rolled back, without touching its marker', async () => {
    savePrivateKey(root, generateEd25519KeyPair().privateKey);
    saveEnrollment(root, enrollment);
    const marker = {
      version: 1,
      phase: 'swapped',
      jobId: '01a22507-6a18-7cbe-81a5-f3632d4c6831',
      applicationId: '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b',
      release: { releaseId: '0bbd5bdb-a616-40ee-a95a-37e36c7e67b6', version: '0.2.0', sequence: 2 },
      executable: '/opt/drover-agent/drover-agent',
      previous: '/opt/drover-agent/drover-agent.previous',
      fromVersion: '0.1.0',
      toVersion: '0.2.0',
      deadlineMs: 120_000,
      swappedAt: '2026-11-22T10:00:00.000Z',
      firstStartAt: '2026-11-22T10:00:06.000Z',
      starts: 2,
      reason: null,
    };
    const file = path.join(root, 'self-update.json');
    fs.writeFileSync(file, JSON.stringify(marker));
    expect((await run('status', '--state-dir', root)).out).toContain(
      'Self-update:   0.2.0 on trial since 2026-11-22T10:00:06.000Z (start 2): it must connect by 2026-11-22T10:02:06.000Z, else 0.1.0 is put back from /opt/drover-agent/drover-agent.previous',
    );
    fs.writeFileSync(file, JSON.stringify({ ...marker, phase: 'rolled_back', reason: 'it did not connect' }));
    expect((await run('status', '--state-dir', root)).out).toContain(
      'Self-update:   0.2.0 rolled back to 0.1.0 (it did not connect); reported at the next start',
    );
    fs.writeFileSync(file, '{');
    expect((await run('status', '--state-dir', root)).out).toMatch(
      /Self-update: +self-update\.json is damaged \(not JSON/,
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('{'); // left for the daemon to set aside
  });

  it('says the enrollment is unknown, not "no", when this user may not read it, and who may', async () => {
    saveEnrollment(root, enrollment);
    const file = path.join(root, 'agent.json');
    const open = fs.openSync;
    const stat = fs.statSync;
    const spies = [
      vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, f?: fs.OpenMode, m?: fs.Mode) => {
        if (p === file) throw Object.assign(new Error(`EACCES: permission denied, open '${file}'`), { code: 'EACCES' });
        return open(p, f ?? 'r', m);
      }) as typeof fs.openSync),
      vi
        .spyOn(fs, 'statSync')
        .mockImplementation(((p: fs.PathLike, o?: never) =>
          p === file ? { ...stat(p), uid: 65534 } : stat(p, o)) as typeof fs.statSync),
    ];
    try {
      const res = await run('status', '--state-dir', root);
      expect(res.code).toBe(1);
      expect(res.out.split('\n').slice(0, 2)).toEqual([
        `Enrolled:      unknown (permission denied: ${file})`,
        expect.stringMatching(
          /^Problem: +Cannot read .*agent\.json: permission denied: it belongs to nobody, and this runs as .*; run it as nobody \(`sudo -u nobody drover-agent …`\)/,
        ),
      ]);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('reports a damaged enrollment or a missing key as a problem, and exits 1', async () => {
    fs.writeFileSync(path.join(root, 'agent.json'), '{"url": 1}');
    const damaged = await run('status', '--state-dir', root);
    expect(damaged.code).toBe(1);
    expect(damaged.out).toMatch(/damaged .*--force/);

    saveEnrollment(root, enrollment);
    const keyless = await run('status', '--state-dir', root);
    expect(keyless.code).toBe(1);
    expect(keyless.out).toMatch(/Agent key: +missing/);
    expect(keyless.out).toMatch(/agent-ed25519\.key is missing/);
  });
});

describe('drover-agent enroll, before any network call', () => {
  it('refuses something that is not an enrollment token', async () => {
    const res = await run('enroll', '--url', 'http://127.0.0.1:9', '--token', 'drv_apitoken', '--state-dir', root);
    expect(res.code).toBe(1);
    expect(res.err).toBe(
      'drover-agent: error: An enrollment token starts with `drve_`; create one in the dashboard (Agents, Enroll)\n',
    );
  });

  it('refuses an existing enrollment without --force, leaving it untouched', async () => {
    saveEnrollment(root, enrollment);
    const res = await run('enroll', '--url', 'http://127.0.0.1:9', '--token', 'drve_x', '--state-dir', root);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/already enrolled as agent 6f1c2b8e-.* with https:\/\/drover\.example\.com/);
  });

  it("shows the control characters of a coordinator's refusal instead of letting the terminal obey them", async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ statusCode: 401, code: 'unauthorized', message: 'no\u001b]52;c;aGk=\u0007\u001b[2K' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await run('enroll', '--url', url, '--token', 'drve_x', '--state-dir', root);
      expect(res.code).toBe(1);
      expect(res.err).toMatch(/^drover-agent: error: .*no\\x1b\]52;c;aGk=\\x07\\x1b\[2K.*\n$/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('says a bad option value (a flag, or a variable of agent.env) in two lines, not followed by the usage', async () => {
    expect(await run('run', '--queue-capacity', '0')).toEqual({
      code: 2,
      out: '',
      err: expect.stringMatching(
        /^error: option '--queue-capacity <n>' argument '0' is invalid\..*\nsee `drover-agent run --help`\n$/,
      ),
    });
    process.env.DROVER_AGENT_MIN_DOWNLOAD_SPEED = 'fast';
    try {
      const res = await run('run', '--state-dir', path.join(root, 'none'));
      expect(res.code).toBe(2);
      expect(res.err.split('\n')).toEqual([
        expect.stringMatching(/^error: option .* value 'fast' from env 'DROVER_AGENT_MIN_DOWNLOAD_SPEED' is invalid/),
        'see `drover-agent run --help`',
        '',
      ]);
    } finally {
      delete process.env.DROVER_AGENT_MIN_DOWNLOAD_SPEED;
    }
    expect((await run('nonsense')).err).toMatch(/\nsee `drover-agent --help`\n$/);
  });

  it('exits 2 with commander usage errors, as the coordinator', async () => {
    expect((await run('enroll')).code).toBe(2);
    expect((await run('nonsense')).code).toBe(2);
    expect((await run('status', '--bogus')).code).toBe(2);
    expect((await run('--version')).code).toBe(0);
    expect((await run('run', '--help')).code).toBe(0);
  });

  it("exits 2 for a bad variable of agent.env, which the unit's RestartPreventExitStatus=2 does not restart every 5 s", async () => {
    // Exit 1 (any failure) made systemd's Restart=on-failure start it again forever, filling the journal.
    for (const [name, value, message] of [
      ['DROVER_AGENT_MIN_DOWNLOAD_SPEED', 'abc', /value 'abc' from env 'DROVER_AGENT_MIN_DOWNLOAD_SPEED' is invalid/],
      ['DROVER_AGENT_LABELS', 'bad', /DROVER_AGENT_LABELS item "bad"/],
      ['DROVER_AGENT_SELF_UPDATE', 'maybe', /DROVER_AGENT_SELF_UPDATE expects on or off/],
      ['HTTPS_PROXY', 'ftp://proxy.lan', /HTTPS_PROXY/],
    ] as const) {
      process.env[name] = value;
      try {
        const res = await run('run', '--state-dir', path.join(root, 'none'));
        expect(res.code, name).toBe(2);
        expect(res.err, name).toMatch(message);
      } finally {
        delete process.env[name];
      }
    }
    // A failure that may pass is not one: systemd retries it.
    expect((await run('run', '--state-dir', path.join(root, 'none'))).code).toBe(1);
  });
});

describe('the state directory setting', () => {
  it('refuses an empty or blank --state-dir, or a blank DROVER_AGENT_STATE_DIR, naming it, in every command', async () => {
    const cwd = process.cwd();
    process.chdir(root); // where a directory named ` ` would be made
    try {
      for (const command of [
        ['run'],
        ['status'],
        ['workflows'],
        ['logs'],
        ['enroll', '--url', 'http://127.0.0.1:1', '--token', `drve_${'a'.repeat(40)}`],
      ]) {
        for (const value of ['', '  ']) {
          expect(await run(...command, '--state-dir', value)).toEqual({
            code: 2,
            out: '',
            err: `drover-agent: error: --state-dir expects a directory path, got \`${value}\`\n`,
          });
        }
        process.env.DROVER_AGENT_STATE_DIR = ' ';
        try {
          expect(await run(...command)).toEqual({
            code: 2,
            out: '',
            err: 'drover-agent: error: DROVER_AGENT_STATE_DIR expects a directory path, got ` `\n',
          });
        } finally {
          delete process.env.DROVER_AGENT_STATE_DIR;
        }
      }
      expect(fs.readdirSync(root)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('the workflows directory setting', () => {
  it('refuses an empty or blank --workflows-dir naming it, rather than read the current directory', async () => {
    for (const command of ['run', 'workflows']) {
      for (const value of ['', ' ']) {
        expect(await run(command, '--state-dir', path.join(root, 'none'), '--workflows-dir', value)).toEqual({
          code: 2,
          out: '',
          err: `drover-agent: error: --workflows-dir expects a directory path, got \`${value}\`\n`,
        });
      }
    }
  });
});

describe('drover-agent run: the self-update settings, checked before anything starts', () => {
  it('names what turned self-update off, for the log line: the flag, or the variable (the package sets it)', () => {
    expect(selfUpdateSetting(false, 'on')).toEqual({ enabled: false, source: '--no-self-update' });
    expect(selfUpdateSetting(undefined, 'off')).toEqual({ enabled: false, source: 'DROVER_AGENT_SELF_UPDATE=off' });
    expect(selfUpdateSetting(undefined, ' 0 ')).toEqual({ enabled: false, source: 'DROVER_AGENT_SELF_UPDATE=0' });
    expect(selfUpdateSetting(undefined, undefined)).toEqual({ enabled: true, source: 'the default' });
  });

  it('reads DROVER_AGENT_SELF_UPDATE as on or off, and refuses anything else', async () => {
    expect([undefined, '', 'on', '1', 'TRUE', 'yes'].map(selfUpdateFromEnv)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['off', '0', 'false', 'No'].map(selfUpdateFromEnv)).toEqual([false, false, false, false]);
    process.env[SELF_UPDATE_ENV] = 'maybe';
    try {
      const res = await run('run', '--state-dir', path.join(root, 'none'));
      expect(res.code).toBe(2);
      expect(res.err).toBe(
        'drover-agent: error: DROVER_AGENT_SELF_UPDATE expects on or off (1/0, true/false), got `maybe`\n',
      );
      // The flag wins over the variable (so it is not read at all).
      const flagged = await run('run', '--no-self-update', '--state-dir', path.join(root, 'none'));
      expect(flagged.err).toMatch(/This machine is not enrolled/);
    } finally {
      delete process.env[SELF_UPDATE_ENV];
    }
  });

  it('refuses a deadline shorter than a second', async () => {
    const res = await run('run', '--self-update-deadline', '500ms', '--state-dir', path.join(root, 'none'));
    expect(res.code).not.toBe(0);
    expect(res.err).toContain('--self-update-deadline must be at least 1000ms, got `500ms`.');
  });
});

describe('drover-agent run: a self-update on trial whose new binary refuses the settings', () => {
  function trial(stateDir: string, exe: string) {
    fs.mkdirSync(stateDir, { mode: 0o700 });
    fs.writeFileSync(exe, '#!/bin/sh\necho new\n', { mode: 0o755 });
    fs.writeFileSync(`${exe}.previous`, '#!/bin/sh\necho previous\n', { mode: 0o755 });
    writeMarker(stateDir, {
      version: 1,
      phase: 'swapped',
      jobId: '01a22507-6a18-7cbe-81a5-f3632d4c6831',
      applicationId: '3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b',
      release: { releaseId: '0bbd5bdb-a616-40ee-a95a-37e36c7e67b6', version: AGENT_VERSION, sequence: 2 },
      executable: exe,
      previous: `${exe}.previous`,
      fromVersion: '0.0.9',
      toVersion: AGENT_VERSION,
      deadlineMs: 120_000,
      swappedAt: new Date().toISOString(),
      firstStartAt: null,
      starts: 0,
      reason: null,
    });
  }

  it('puts the previous binary back and exits 75 for it to start, where exit 2 left the machine with no agent', async () => {
    // It stops before its daemon reads the marker: its deadline never passed, and the unit does not restart exit 2.
    const stateDir = path.join(root, 'state');
    const exe = path.join(root, 'drover-agent');
    trial(stateDir, exe);
    process.env.DROVER_AGENT_LABELS = 'bad';
    try {
      const res = await run('run', '--state-dir', stateDir);
      expect(res.code).toBe(75);
      const reason = `${AGENT_VERSION} refused this machine's settings: DROVER_AGENT_LABELS item "bad": "bad" is not a label: expected key=value`;
      expect(res.err).toBe(
        'drover-agent: error: DROVER_AGENT_LABELS item "bad": "bad" is not a label: expected key=value\n' +
          `drover-agent: self-update to ${AGENT_VERSION} rolled back: ${reason}; 0.0.9 was put back from ${exe}.previous; restarting (exit code 75)\n`,
      );
      expect(fs.readFileSync(exe, 'utf8')).toContain('previous');
      // The previous binary, started next, fails the update job with that reason.
      expect(readMarker(stateDir)).toMatchObject({ phase: 'rolled_back', reason });
    } finally {
      delete process.env.DROVER_AGENT_LABELS;
    }
  });

  it('leaves the trial alone when another agent runs with the state directory (a typo run by hand beside the service)', async () => {
    const stateDir = path.join(root, 'state');
    const exe = path.join(root, 'drover-agent');
    trial(stateDir, exe);
    const service = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      acquireDaemonLock(stateDir, service.pid);
      const res = await run('run', '--bogus', '--state-dir', stateDir);
      expect(res.code).toBe(2);
      expect(fs.readFileSync(exe, 'utf8')).toContain('new');
      expect(readMarker(stateDir)).toMatchObject({ phase: 'swapped' });
    } finally {
      service.kill();
    }
  });

  it('does so for a refused flag too, and leaves a binary that is no trial alone (exit 2)', async () => {
    const stateDir = path.join(root, 'state');
    const exe = path.join(root, 'drover-agent');
    trial(stateDir, exe);
    const res = await run('run', '--queue-capacity', '0', `--state-dir=${stateDir}`);
    expect(res.code).toBe(75);
    expect(readMarker(stateDir)).toMatchObject({
      phase: 'rolled_back',
      reason: expect.stringMatching(
        new RegExp(
          `^${AGENT_VERSION.replaceAll('.', '\\.')} refused this machine's settings: option '--queue-capacity <n>' argument '0' is invalid`,
        ),
      ),
    });
    fs.rmSync(markerPath(stateDir));
    fs.writeFileSync(exe, 'new');
    expect((await run('run', '--queue-capacity', '0', '--state-dir', stateDir)).code).toBe(2);
    expect(fs.readFileSync(exe, 'utf8')).toBe('new');
  });
});

describe('drover-agent run: a crash', () => {
  it('is said on stderr too (the log file may be what failed, on a full disk), then exits 70', () => {
    const logged: string[] = [];
    let err = '';
    const exits: number[] = [];
    const crash = crashHandler(
      { fatal: (_fields: unknown, message: string) => void logged.push(message) } as never,
      { err: (text) => void (err += text) },
      (code) => void exits.push(code),
    );
    crash(new Error('Cannot write /var/lib/drover-agent/jobs/x/journal.json: ENOSPC'));
    const message = 'the agent crashed: Cannot write /var/lib/drover-agent/jobs/x/journal.json: ENOSPC';
    expect(logged).toEqual([message]);
    expect(err).toBe(`drover-agent: ${message} (exit 70)\n`);
    expect(exits).toEqual([70]);
  });
});

/**
 * This process as root, and `stateDir` as belonging to nobody (65534), as /var/lib/drover-agent
 * belongs to drover-agent: the spies to restore.
 */
function rootOverNobodysDir(stateDir: string) {
  const stat = fs.statSync;
  return [
    vi.spyOn(process, 'getuid').mockReturnValue(0),
    vi
      .spyOn(fs, 'statSync')
      .mockImplementation(((p: fs.PathLike, o?: never) =>
        p === stateDir ? { ...stat(p), uid: 65534 } : stat(p, o)) as typeof fs.statSync),
  ];
}

describe('drover-agent run as root', () => {
  it("refuses the state directory of the service's user, naming the command that works, and writes nothing", async () => {
    // `sudo drover-agent run` on the service's directory would leave root's files there, 0600:
    // the service would then lose its counters, the reports in its outbox, the jobs root ran.
    const stateDir = path.join(root, 'state');
    fs.mkdirSync(stateDir, { mode: 0o700 });
    fs.writeFileSync(path.join(stateDir, 'agent.json'), '{}', { mode: 0o600 });
    const spies = rootOverNobodysDir(stateDir);
    try {
      const res = await run('run', '--state-dir', stateDir);
      expect(res.code).toBe(1);
      expect(res.err).toBe(
        `drover-agent: error: This state directory (${stateDir}) belongs to nobody, and the agent runs as that user: ` +
          'files root writes there would be unreadable to it. Run `sudo -u nobody drover-agent run …` instead ' +
          `(to run the agent as root, give root the directory first: \`chown -R root: ${stateDir}\`)\n`,
      );
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(fs.readdirSync(stateDir)).toEqual(['agent.json']);
  });
});

describe('drover-agent enroll as root', () => {
  it("refuses the state directory of the service's user, naming the command that works, and writes nothing", async () => {
    const stateDir = path.join(root, 'state');
    fs.mkdirSync(stateDir, { mode: 0o700 });
    const spies = rootOverNobodysDir(stateDir);
    try {
      const res = await run('enroll', '--url', 'http://127.0.0.1:9', '--token', 'drve_x', '--state-dir', stateDir);
      expect(res.code).toBe(1);
      expect(res.err).toBe(
        `drover-agent: error: This state directory (${stateDir}) belongs to nobody, and the agent runs as that user: ` +
          'files root writes there would be unreadable to it. Run `sudo -u nobody drover-agent enroll …` instead\n',
      );
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(fs.readdirSync(stateDir)).toEqual([]);
  });
});
