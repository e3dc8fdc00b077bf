import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertArch, elfFiles } from '../../scripts/package/elf.js';
import { eventually } from '../helpers/poll.js';

/**
 * The Debian packages `pnpm package` writes (docs/install.md), built once here, for amd64 only
 * and compressed with gzip -1 (`--fast`): the arm64 ones are staged the same way around another
 * runtime, and `pnpm package` refuses any ELF file of another architecture than the package's
 * (the case at the end). Read with dpkg-deb, unpacked into a temporary root and run from there;
 * their units checked with `systemd-analyze verify`, their maintainer scripts run in a fake root
 * (DPKG_ROOT, with the system commands they call stubbed) and checked with shellcheck, the
 * packages with lintian. A missing tool skips its case, saying which: scripts/lib/test-tools.sh
 * installs them in CI.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const TOOLS = {
  dpkgDeb: has('dpkg-deb') && has('readelf'),
  lintian: has('lintian'),
  shellcheck: has('shellcheck'),
  systemdAnalyze: has('systemd-analyze') && fs.existsSync('/usr/lib/systemd/system/sysinit.target'),
};
const version = (dir: string) =>
  (JSON.parse(fs.readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as { version: string }).version;
const AGENT = `drover-agent_${version('agent')}_amd64.deb`;
const COORDINATOR = `drover-coordinator_${version('coordinator')}_amd64.deb`;
const BANNER = /Drover coordinator listening on (http:\/\/127\.0\.0\.1:\d+)/;

let work: string;
let out: string;
/** Both packages unpacked (`dpkg-deb -x`) into one root, as they are installed. */
let unpacked: string;
const deb = (name: string) => path.join(out, name);

function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const res = spawnSync(file, args, { encoding: 'utf8', env, timeout: 60_000 });
  if (res.error) throw res.error;
  return res;
}

/** `dpkg-deb -c` as { path: "mode owner/group" }, paths without the leading `.`. */
function contents(name: string): Map<string, string> {
  const listing = execFileSync('dpkg-deb', ['-c', deb(name)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return new Map(
    listing
      .trim()
      .split('\n')
      .map((line) => {
        const [mode, owner, , , , entry] = line.split(/\s+/);
        return [entry!.replace(/^\./, ''), `${mode} ${owner}`];
      }),
  );
}

/** lintian's findings on each package, started as soon as they are built (about 30 s on 2 cores). */
const lintian = new Map<string, Promise<{ code: number | null; output: string }>>();
const lintianRuns: ChildProcess[] = [];
function startLintian(name: string) {
  lintian.set(
    name,
    new Promise((resolve) => {
      const child = execFile(
        'lintian',
        // Not the spelling of the binaries' strings: they are the Node.js runtime's, whose words are
        // upstream's, and reading them was 14 of the 50 s of CPU lintian takes.
        ['--no-cfg', '--dont-check-part', 'binaries/spelling', deb(name)],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          // lintian says it would rather not run as root on stderr; that is not a finding.
          const output = `${stdout}${stderr.replace(/^running with root privileges is not recommended!\n/m, '')}`;
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output });
        },
      );
      lintianRuns.push(child);
    }),
  );
}

describe.skipIf(!TOOLS.dpkgDeb)('the Debian packages (dpkg-deb and readelf: apt-get install dpkg binutils)', () => {
  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-packages-'));
    out = path.join(work, 'out');
    await new Promise<void>((resolve, reject) => {
      execFile(
        'bash',
        [path.join(ROOT, 'scripts/package.sh'), '--arch', 'amd64', '--no-build', '--fast', '--out', out],
        { cwd: ROOT, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) =>
          error ? reject(new Error(`pnpm package failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve(),
      );
    });
    if (TOOLS.lintian) for (const name of [AGENT, COORDINATOR]) startLintian(name);
    unpacked = path.join(work, 'root');
    for (const name of [AGENT, COORDINATOR]) execFileSync('dpkg-deb', ['-x', deb(name), unpacked]);
  }, 240_000);
  afterAll(() => {
    // A run cut short by a failure leaves lintian reading the packages: it stops with them.
    for (const child of lintianRuns) if (child.exitCode === null) child.kill();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('carry the control fields dpkg needs: name, version, architecture, the libraries they link', () => {
    const fields = (name: string) =>
      Object.fromEntries(
        ['Package', 'Version', 'Architecture', 'Depends', 'Maintainer', 'Section', 'Installed-Size'].map((f) => [
          f,
          execFileSync('dpkg-deb', ['-f', deb(name), f], { encoding: 'utf8' }).trim(),
        ]),
      );
    const agent = fields(AGENT);
    expect(agent).toMatchObject({ Package: 'drover-agent', Version: version('agent'), Architecture: 'amd64' });
    expect(agent.Depends).toMatch(/^adduser, libc6 \(>= 2\.\d+\), libgcc-s1 \(>= [\d.]+\), libstdc\+\+6 \(>= \d+\)$/);
    const coordinator = fields(COORDINATOR);
    expect(coordinator).toMatchObject({
      Package: 'drover-coordinator',
      Version: version('coordinator'),
      Architecture: 'amd64',
    });
    // better-sqlite3's addon needs a newer C library than Node.js itself.
    expect(coordinator.Depends).toMatch(/^adduser, libc6 \(>= 2\.3\d\), libgcc-s1 .*, libstdc\+\+6 \(>= \d+\)$/);
    for (const f of [agent, coordinator]) {
      expect(f.Maintainer).toMatch(/^.+ <[^@\s]+@[^>\s]+>$/);
      expect(Number(f['Installed-Size'])).toBeGreaterThan(50_000); // KiB: a Node.js runtime each
    }
    const conffiles = (name: string) => {
      const dir = path.join(work, `control-${name}`);
      execFileSync('dpkg-deb', ['-e', deb(name), dir]);
      return fs.readFileSync(path.join(dir, 'conffiles'), 'utf8');
    };
    expect(conffiles(AGENT)).toBe('/etc/drover/agent.env\n');
    expect(conffiles(COORDINATOR)).toBe('/etc/drover/coordinator.env\n');
  });

  it('install the layout of docs/install.md, owned by root, the environment files readable by root only', () => {
    const agent = contents(AGENT);
    expect([...agent.keys()].filter((p) => !p.endsWith('/')).sort()).toEqual([
      '/etc/drover/agent.env',
      '/lib/systemd/system/drover-agent.service',
      '/usr/bin/drover-agent',
      '/usr/share/doc/drover-agent/LICENSE-nodejs',
      '/usr/share/doc/drover-agent/changelog.gz',
      '/usr/share/doc/drover-agent/copyright',
      '/usr/share/doc/drover-agent/install.md',
      '/usr/share/lintian/overrides/drover-agent',
      '/usr/share/man/man1/drover-agent.1.gz',
    ]);
    expect(agent.get('/usr/bin/drover-agent')).toBe('-rwxr-xr-x root/root');
    expect(agent.get('/etc/drover/agent.env')).toBe('-rw------- root/root');

    const coordinator = contents(COORDINATOR);
    const lib = '/usr/lib/drover-coordinator';
    expect(coordinator.get('/usr/bin/drover-coordinator')).toBe('-rwxr-xr-x root/root');
    expect(coordinator.get(`${lib}/bin/node`)).toBe('-rwxr-xr-x root/root');
    expect(coordinator.get('/etc/drover/coordinator.env')).toBe('-rw------- root/root');
    for (const file of [
      '/lib/systemd/system/drover-coordinator.service',
      `${lib}/package.json`,
      `${lib}/dist/cli/main.js`,
      `${lib}/migrations/0001_core.sql`,
      `${lib}/migrations/postgres/0001_schema.sql`,
      `${lib}/dashboard-dist/index.html`,
      `${lib}/node_modules/@drover/shared/dist/index.js`,
      `${lib}/node_modules/fastify/package.json`,
      '/usr/share/doc/drover-coordinator/copyright',
    ]) {
      expect(coordinator.get(file), file).toBe('-rw-r--r-- root/root');
    }
    // One native module, this architecture's: no other platform's prebuilt addons, no sources.
    expect([...coordinator.keys()].filter((p) => p.endsWith('.node'))).toEqual([
      `${lib}/node_modules/better-sqlite3/prebuilds/linux-x64.node`,
    ]);
    for (const [entry, mode] of [...agent, ...coordinator]) {
      expect(mode.split(' ')[1], entry).toBe('root/root');
      // The data directories are the maintainer scripts' (made once, never removed), not dpkg's.
      expect(entry).not.toMatch(/^\/var\//);
      // Nothing of development: the workspace's sources and tests, pnpm's links, declarations,
      // source maps, tsc's incremental build state.
      expect(entry).not.toMatch(/\/(src|test)\/.*\.ts$|\/\.bin\/|\/\.pnpm\/|\.d\.ts$|\.map$|\.tsbuildinfo$/);
    }
    expect(elfFiles(unpacked).map((f) => f.arch)).toEqual(['amd64', 'amd64', 'amd64']);
  });

  it('run from the unpacked tree on the runtime they carry: the agent binary and the coordinator launcher', () => {
    // No node on the PATH: each brings its own.
    const env = { PATH: '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8' };
    const agent = run(path.join(unpacked, 'usr/bin/drover-agent'), ['--version'], env);
    expect(agent.status, agent.stderr).toBe(0);
    expect(agent.stdout.trim()).toBe(`${version('agent')} (Node.js ${process.versions.node}, linux-x64)`);
    const agentHelp = run(path.join(unpacked, 'usr/bin/drover-agent'), ['--help'], env);
    expect(agentHelp.stdout).toMatch(/\benroll\b[\s\S]*\brun\b/);

    const coordinator = run(path.join(unpacked, 'usr/bin/drover-coordinator'), ['--version'], env);
    expect(coordinator.status, coordinator.stderr).toBe(0);
    expect(coordinator.stdout.trim()).toBe(`${version('coordinator')} (Node.js ${process.versions.node}, linux-x64)`);
    const coordinatorHelp = run(path.join(unpacked, 'usr/bin/drover-coordinator'), ['--help'], env);
    expect(coordinatorHelp.stdout).toMatch(/\bstart\b[\s\S]*\bbackup\b/);
  });

  it('start the coordinator from the unpacked tree on a new data directory: it migrates, serves /healthz and the dashboard, and stops on SIGTERM', async () => {
    const dataDir = path.join(work, 'data');
    const child = spawn(path.join(unpacked, 'usr/bin/drover-coordinator'), ['start', '--port', '0'], {
      env: { PATH: '/usr/bin:/bin', HOME: work, DROVER_DATA_DIR: dataDir, DROVER_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await eventually(
        () => BANNER.exec(stdout)?.[1],
        30_000,
        () => `the banner; stderr: ${stderr}`,
      );
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', version: version('coordinator'), database: 'sqlite' });
      const dashboard = await fetch(`${url}/`);
      expect(dashboard.status).toBe(200);
      expect(await dashboard.text()).toContain('<div id="root">');
      expect(fs.existsSync(path.join(dataDir, 'drover.sqlite'))).toBe(true);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it.skipIf(!TOOLS.systemdAnalyze)(
    'ship units that systemd-analyze verify accepts (systemd: apt-get install systemd)',
    () => {
      // The unpacked root holds the packages' files; systemd's own units (the targets ours are
      // ordered after) are copied in from this machine, so ExecStart= is checked in that root.
      const units = path.join(unpacked, 'usr/lib/systemd/system');
      fs.cpSync('/usr/lib/systemd/system', units, { recursive: true, dereference: false, verbatimSymlinks: true });
      for (const unit of ['drover-agent.service', 'drover-coordinator.service']) {
        fs.rmSync(path.join(units, unit), { force: true });
        const res = run('systemd-analyze', ['verify', `--root=${unpacked}`, `/lib/systemd/system/${unit}`]);
        expect({ unit, status: res.status, stderr: res.stderr }).toEqual({ unit, status: 0, stderr: '' });
      }
    },
  );

  it.skipIf(!TOOLS.shellcheck)(
    'ship maintainer scripts and a launcher that shellcheck finds nothing in (apt-get install shellcheck)',
    () => {
      for (const name of [AGENT, COORDINATOR]) {
        const control = path.join(work, `control-${name}`);
        fs.rmSync(control, { recursive: true, force: true });
        execFileSync('dpkg-deb', ['-e', deb(name), control]);
        const scripts = ['postinst', 'prerm', 'postrm'].map((s) => path.join(control, s));
        const res = run('shellcheck', ['--shell=sh', ...scripts]);
        expect(res.stdout, name).toBe('');
        expect(res.status).toBe(0);
      }
      const launcher = run('shellcheck', [path.join(unpacked, 'usr/bin/drover-coordinator')]);
      expect(launcher.stdout).toBe('');
    },
  );

  describe.each([
    { name: 'drover-agent', user: 'drover-agent', data: 'var/lib/drover-agent', dirs: ['', '/workflows'] },
    { name: 'drover-coordinator', user: 'drover', data: 'var/lib/drover', dirs: [''] },
  ])('$name maintainer scripts, run in a fake root', ({ name, user, data, dirs }) => {
    let fake: string;
    let control: string;
    const log = () => path.join(fake, 'calls.log');
    const config = () => path.join(fake, 'etc/drover', name === 'drover-agent' ? 'agent.env' : 'coordinator.env');

    beforeAll(() => {
      fake = fs.mkdtempSync(path.join(work, `fake-${name}-`));
      control = path.join(fake, 'DEBIAN');
      execFileSync('dpkg-deb', ['--control', deb(name === 'drover-agent' ? AGENT : COORDINATOR), control]);
      // The commands the scripts call on a real system, recording their calls (but getent's, which
      // only asks); adduser and getent keep a passwd of their own.
      const stubs = path.join(fake, 'stubs');
      fs.mkdirSync(stubs);
      const stub = (command: string, body = '') =>
        fs.writeFileSync(
          path.join(stubs, command),
          `#!/bin/sh\necho "${command} $*" >> "${log()}"\n${body}\nexit 0\n`,
          { mode: 0o755 },
        );
      stub('adduser', `for last; do :; done; echo "$last:" >> "${fake}/passwd"`);
      fs.writeFileSync(path.join(stubs, 'getent'), `#!/bin/sh\ngrep -q "^$2:" "${fake}/passwd" 2>/dev/null\n`, {
        mode: 0o755,
      });
      for (const command of ['chown', 'systemctl', 'deb-systemd-helper', 'deb-systemd-invoke', 'deluser', 'userdel']) {
        stub(command);
      }
      fs.mkdirSync(path.join(fake, 'var/lib'), { recursive: true });
      fs.mkdirSync(path.join(fake, 'run/systemd/system'), { recursive: true }); // systemd runs
      // What dpkg unpacked before postinst: the conffile, and the other Drover package's.
      fs.mkdirSync(path.join(fake, 'etc/drover'), { recursive: true });
      fs.writeFileSync(config(), '#DROVER_X=1\n');
    });

    /** Runs a maintainer script; answers the commands it called. */
    const script = (which: string, ...args: string[]) => {
      fs.rmSync(log(), { force: true });
      const res = run(path.join(control, which), args, {
        PATH: `${path.join(fake, 'stubs')}:/usr/bin:/bin`,
        DPKG_ROOT: fake,
        DPKG_MAINTSCRIPT_NAME: which,
        DPKG_MAINTSCRIPT_PACKAGE: name,
      });
      expect(res.status, `${which} ${args.join(' ')}: ${res.stderr}`).toBe(0);
      return fs.existsSync(log()) ? fs.readFileSync(log(), 'utf8').trim().split('\n') : [];
    };
    const mode = (dir: string) => (fs.statSync(path.join(fake, data + dir)).mode & 0o777).toString(8);

    it('a first install makes the user and the data directory 0700, and starts nothing', () => {
      const calls = script('postinst', 'configure', '');
      expect(calls).toEqual([
        `adduser --system --group --quiet --home /${data} --no-create-home --shell /usr/sbin/nologin --gecos ${name === 'drover-agent' ? 'Drover agent' : 'Drover coordinator'} ${user}`,
        ...dirs.map((dir) => `chown ${user}:${user} ${fake}/${data}${dir}`),
        `deb-systemd-helper unmask ${name}.service`,
        `deb-systemd-helper update-state ${name}.service`,
        'systemctl --system daemon-reload',
      ]);
      for (const dir of dirs) expect(mode(dir)).toBe('700');
    });

    it('run again, it changes nothing and still starts nothing', () => {
      expect(script('postinst', 'configure', '')).toEqual([
        `deb-systemd-helper unmask ${name}.service`,
        `deb-systemd-helper update-state ${name}.service`,
        'systemctl --system daemon-reload',
      ]);
    });

    it('an upgrade keeps the data and restarts the service only if it runs (try-restart)', () => {
      fs.writeFileSync(path.join(fake, data, 'state.json'), '{"kept":true}');
      fs.chmodSync(path.join(fake, data), 0o750); // an administrator's choice, left as it is
      expect(script('prerm', 'upgrade', '0.2.0')).toEqual([]); // not stopped before the new files
      const calls = script('postinst', 'configure', '0.0.9');
      expect(calls).toContain(`deb-systemd-invoke try-restart ${name}.service`);
      expect(calls.filter((c) => /^(adduser|chown|deb-systemd-invoke (start|restart))/.test(c))).toEqual([]);
      expect(fs.readFileSync(path.join(fake, data, 'state.json'), 'utf8')).toBe('{"kept":true}');
      expect(mode('')).toBe('750');
      fs.chmodSync(path.join(fake, data), 0o700);
    });

    it('without systemd running, it calls no systemctl', () => {
      fs.rmSync(path.join(fake, 'run/systemd'), { recursive: true });
      try {
        const calls = script('postinst', 'configure', '0.0.9');
        expect(calls.filter((c) => /^(systemctl|deb-systemd-invoke)/.test(c))).toEqual([]);
        expect(script('prerm', 'remove')).toEqual([]);
      } finally {
        fs.mkdirSync(path.join(fake, 'run/systemd/system'), { recursive: true });
      }
    });

    it('a removal stops the service and keeps the configuration and the data', () => {
      expect(script('prerm', 'remove')).toEqual([`deb-systemd-invoke stop ${name}.service`]);
      expect(script('postrm', 'remove')).toEqual([
        'systemctl --system daemon-reload',
        `deb-systemd-helper mask ${name}.service`,
      ]);
      expect(fs.existsSync(config())).toBe(true);
      expect(fs.existsSync(path.join(fake, data, 'state.json'))).toBe(true);
    });

    it('a removal given up after the prerm stopped the service starts it again (abort-remove), as debhelper does', () => {
      expect(script('prerm', 'remove')).toEqual([`deb-systemd-invoke stop ${name}.service`]);
      // deb-systemd-invoke starts an enabled unit only: one never enabled stays stopped.
      expect(script('postinst', 'abort-remove')).toEqual([
        `deb-systemd-helper unmask ${name}.service`,
        `deb-systemd-helper update-state ${name}.service`,
        'systemctl --system daemon-reload',
        `deb-systemd-invoke start ${name}.service`,
      ]);
      // An upgrade or a deconfiguration given up: the prerm stopped nothing, nothing is started.
      for (const action of ['abort-upgrade', 'abort-deconfigure']) {
        expect(script('postinst', action, '0.2.0').filter((c) => c.startsWith('deb-systemd-invoke'))).toEqual([]);
      }
    });

    it('a purge removes the configuration and the unit state, never the data nor the user; twice the same', () => {
      fs.writeFileSync(`${config()}.dpkg-old`, 'set aside by dpkg');
      const other = path.join(fake, 'etc/drover/other-package.env');
      fs.writeFileSync(other, '');
      for (let i = 0; i < 2; i++) {
        expect(script('postrm', 'purge')).toEqual([
          'systemctl --system daemon-reload',
          `deb-systemd-helper purge ${name}.service`,
          `deb-systemd-helper unmask ${name}.service`,
        ]);
        expect(fs.existsSync(config())).toBe(false);
        expect(fs.existsSync(`${config()}.dpkg-old`)).toBe(false);
        // /etc/drover stays while the other Drover package has its file there.
        expect(fs.existsSync(other)).toBe(true);
        expect(fs.readFileSync(path.join(fake, data, 'state.json'), 'utf8')).toBe('{"kept":true}');
        expect(fs.readFileSync(path.join(fake, 'passwd'), 'utf8')).toBe(`${user}:\n`);
      }
      fs.rmSync(other);
      script('postrm', 'purge');
      expect(fs.existsSync(path.join(fake, 'etc/drover'))).toBe(false);
      expect(fs.existsSync(path.join(fake, data))).toBe(true);
    });

    it('refuses an unknown action', () => {
      const res = run(path.join(control, 'postinst'), ['frobnicate'], { PATH: '/usr/bin:/bin', DPKG_ROOT: fake });
      expect(res.status).toBe(1);
      expect(res.stderr).toContain("unknown argument 'frobnicate'");
    });
  });

  it('pnpm package refuses an architecture it does not build, with exit status 2', () => {
    const res = run('bash', [path.join(ROOT, 'scripts/package.sh'), '--arch', 'i386', '--out', out]);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('package: --arch expects amd64 or arm64, got "i386"');
  });

  it.skipIf(!TOOLS.lintian)(
    'pass lintian (apt-get install lintian)',
    async () => {
      for (const name of [AGENT, COORDINATOR]) {
        const { code, output } = await lintian.get(name)!;
        expect({ name, code, output }).toEqual({ name, code: 0, output: '' });
      }
    },
    120_000,
  );
});

describe('the architecture check of pnpm package', () => {
  it('refuses a tree holding a native module of another architecture, naming it', () => {
    // better-sqlite3 carries prebuilt addons for every platform: the arm64 one is not amd64's.
    const fromCoordinator = createRequire(path.join(ROOT, 'coordinator/package.json'));
    const prebuilds = path.join(path.dirname(fromCoordinator.resolve('better-sqlite3/package.json')), 'prebuilds');
    const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-arch-'));
    try {
      fs.copyFileSync(path.join(prebuilds, 'linux-x64.node'), path.join(tree, 'x64.node'));
      expect(() => assertArch(tree, 'amd64')).not.toThrow();
      fs.copyFileSync(path.join(prebuilds, 'linux-arm64.node'), path.join(tree, 'better_sqlite3.node'));
      expect(() => assertArch(tree, 'amd64')).toThrow(
        'files for another architecture than amd64: better_sqlite3.node (arm64)',
      );
      expect(() => assertArch(tree, 'arm64')).toThrow('x64.node (amd64)');
    } finally {
      fs.rmSync(tree, { recursive: true, force: true });
    }
  });
});
