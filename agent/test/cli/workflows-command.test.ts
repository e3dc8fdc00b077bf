import fs from 'node:fs';
import fsPromises from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runAgentCli as run } from './run-cli.js';

let stateDir: string;
let dir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-workflows-cli-'));
  dir = path.join(stateDir, 'workflows');
  fs.mkdirSync(dir);
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

const DEPLOY = `name: deploy
version: "2.1"
params:
  - {name: target, type: enum, options: [staging, production], required: true}
secrets: [DEPLOY_TOKEN]
timeout: 15m
steps:
  - run: make
  - run: ./ship.sh
`;

/** BEL, ESC and CSI: what a terminal obeys rather than shows. */
// eslint-disable-next-line no-control-regex
const OBEYED = /[\u0007\u001b\u009b]/;

describe('drover-agent workflows', () => {
  it('lists the valid workflows with their version, params, steps and file, and exits 0', async () => {
    fs.writeFileSync(path.join(dir, 'deploy.yaml'), DEPLOY);
    fs.writeFileSync(path.join(dir, 'hello.yml'), 'name: hello\nsteps: [{run: echo}]\n');
    fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), 'DEPLOY_TOKEN: "x-42"\n', { mode: 0o600 });
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.err).toBe('');
    expect(res.code).toBe(0);
    expect(res.out).toBe(
      [
        `2 workflows in ${dir}:`,
        '',
        '  NAME    VERSION  PARAMS        STEPS    TIMEOUT  FILE',
        '  deploy  2.1      target*:enum  2 steps  15m      deploy.yaml',
        '  hello   -        -             1 step   -        hello.yml',
        '',
      ].join('\n'),
    );
  });

  it('prints each problem as file:line: message and exits 1 when a file is invalid', async () => {
    fs.writeFileSync(path.join(dir, 'hello.yml'), 'name: hello\nsteps: [{run: echo}]\n');
    fs.writeFileSync(path.join(dir, 'deploy.yaml'), DEPLOY.replace('timeout: 15m', 'timeout: soon'));
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.code).toBe(1);
    expect(res.out).toContain('1 workflow in');
    expect(res.out).toContain(
      '1 invalid file skipped:\n  deploy.yaml:6: timeout: expected a duration like 30s, 5m or a number of seconds, got `soon`\n',
    );
  });

  it('masks the values of secrets.yaml that a problem repeats, as the agent does in its log and status', async () => {
    fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), 'DEPLOY_TOKEN: "Xq7_s3cr3t_Zk9"\n', { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'deploy.yaml'), DEPLOY.replace('timeout: 15m', 'timeout: Xq7_s3cr3t_Zk9'));
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.code).toBe(1);
    expect(res.out).not.toContain('Xq7_s3cr3t_Zk9');
    expect(res.out).toContain(
      '  deploy.yaml:6: timeout: expected a duration like 30s, 5m or a number of seconds, got `***`\n',
    );
    const json = await run('workflows', '--state-dir', stateDir, '--json');
    expect(json.out).not.toContain('Xq7_s3cr3t_Zk9');
    expect(JSON.parse(json.out).problems[0].message).toBe(
      'timeout: expected a duration like 30s, 5m or a number of seconds, got `***`',
    );
  });

  it('counts invalid files, each once however many problems it has, as drover-agent status does', async () => {
    fs.writeFileSync(path.join(dir, 'hello.yml'), 'name: hello\nsteps: [{run: echo}]\n');
    fs.writeFileSync(
      path.join(dir, 'deploy.yaml'),
      'name: deploy\nversion: [2]\ntimeout: soon\nsteps:\n  - run: make\n',
    );
    fs.writeFileSync(path.join(dir, 'other.yaml'), 'steps: []\n');
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.code).toBe(1);
    expect(res.out).toContain(
      [
        '2 invalid files skipped (4 problems):',
        '  deploy.yaml:2: version: expected a string, got a list',
        '  deploy.yaml:3: timeout: expected a duration like 30s, 5m or a number of seconds, got `soon`',
        '  other.yaml:1: missing `name`: the name triggers use to run this workflow',
        '  other.yaml:1: steps: expected at least 1 item, got none',
      ].join('\n'),
    );
  });

  it('shows control characters and line breaks of file names as \\xHH, in the table, the problems and --json', async () => {
    const title = 'good\u001b]0;owned\u0007\nname.yaml'; // sets the terminal's title, then a new line
    fs.writeFileSync(path.join(dir, title), 'name: hello\nsteps: [{run: echo}]\n');
    fs.writeFileSync(path.join(dir, 'bad\u001b[2J\u009b.yaml'), 'name: [\n');
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.code).toBe(1);
    expect(res.out).not.toMatch(OBEYED);
    expect(res.out).toContain('  hello  -        -       1 step  -        good\\x1b]0;owned\\x07\\x0aname.yaml\n');
    expect(res.out).toMatch(/\n {2}bad\\x1b\[2J\\x9b\.yaml:2: invalid YAML: /);
    const json = await run('workflows', '--state-dir', stateDir, '--json');
    expect(json.out).not.toMatch(OBEYED);
    const parsed = JSON.parse(json.out) as { workflows: { file: string }[]; problems: { file: string }[] };
    expect(parsed.workflows[0]?.file).toBe(title);
    expect(parsed.problems[0]?.file).toBe('bad\u001b[2J\u009b.yaml');
  });

  it('warns about secrets missing from secrets.yaml, too short to be masked, or a secrets file that is refused', async () => {
    fs.writeFileSync(path.join(dir, 'deploy.yaml'), DEPLOY);
    const missing = await run('workflows', '--state-dir', stateDir);
    expect(missing.code).toBe(0);
    expect(missing.out).toContain(
      'Warnings:\n  deploy.yaml: the secret `DEPLOY_TOKEN` is not in secrets.yaml; jobs of `deploy` will fail until added',
    );
    fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), 'DEPLOY_TOKEN: "x"\nPIN: "12"\nKEY: "abc"\nNONE: ""\n', {
      mode: 0o600,
    });
    const short = await run('workflows', '--state-dir', stateDir);
    expect(short.code).toBe(0);
    expect(short.out).toContain(
      'Warnings:\n  secrets.yaml: the values of `DEPLOY_TOKEN`, `PIN` are shorter than 3 characters: not masked in ' +
        'logs and outputs (masking would hide every such character in them); use a longer value\n',
    );
    fs.writeFileSync(path.join(stateDir, 'secrets.yaml'), 'DEPLOY_TOKEN: "x"\n', { mode: 0o644 });
    fs.chmodSync(path.join(stateDir, 'secrets.yaml'), 0o644);
    const open = await run('workflows', '--state-dir', stateDir);
    expect(open.out).toMatch(/Warnings:\n {2}secrets: .*mode 0644.*chmod 600/);
  });

  it('reads another directory with --workflows-dir and prints JSON with --json', async () => {
    const other = path.join(stateDir, 'elsewhere');
    fs.mkdirSync(other);
    fs.writeFileSync(path.join(other, 'hello.yaml'), 'name: hello\nsteps: [{run: echo, timeout: 2s}]\n');
    fs.writeFileSync(path.join(other, 'bad.yaml'), 'name: [\n');
    const res = await run('workflows', '--state-dir', stateDir, '--workflows-dir', other, '--json');
    expect(res.code).toBe(1);
    const json = JSON.parse(res.out);
    expect(json).toMatchObject({
      directory: other,
      missingDirectory: false,
      workflows: [{ file: 'hello.yaml', definition: { name: 'hello', steps: [{ run: 'echo', timeout: 2000 }] } }],
      problems: [{ file: 'bad.yaml', line: expect.any(Number), message: expect.stringMatching(/^invalid YAML/) }],
      warnings: [],
    });
  });

  it.runIf(process.getuid?.() === 0)(
    "run as root (sudo), judges the files as the agent's user, the state directory's owner, would",
    async () => {
      // The packaged service: /var/lib/drover-agent and its files belong to drover-agent (here 4242).
      fs.writeFileSync(path.join(dir, 'hello.yaml'), 'name: hello\nsteps: [{run: echo}]\n', { mode: 0o600 });
      fs.writeFileSync(path.join(dir, 'other.yaml'), 'name: other\nsteps: [{run: echo}]\n', { mode: 0o600 });
      for (const p of [stateDir, dir, path.join(dir, 'hello.yaml')]) fs.chownSync(p, 4242, 4242);
      fs.chownSync(path.join(dir, 'other.yaml'), 4343, 4343); // a third user's
      const res = await run('workflows', '--state-dir', stateDir, '--json');
      const { workflows, problems } = JSON.parse(res.out) as { workflows: { file: string }[]; problems: unknown[] };
      expect(workflows.map((w) => w.file)).toEqual(['hello.yaml']);
      // The advice gives the file to the agent's user, never to root (the service could not read it).
      expect(problems).toEqual([
        {
          file: 'other.yaml',
          message:
            "the file belongs to uid 4343, not to root or to uid 4242, the agent's user, and the agent runs what it says: " +
            'skipped until it belongs to one of them (`chown 4242`)',
        },
      ]);
      expect(res.code).toBe(1);
    },
  );

  it("fails, saying who may read it, when this user may not read the directory (the service's, 0700)", async () => {
    // It said "No valid workflows in ...; 1 invalid file skipped: <dir>: the workflows directory
    // <dir>: cannot read it (EACCES)", as if the files were gone or broken.
    fs.writeFileSync(path.join(dir, 'deploy.yaml'), DEPLOY);
    const readdir = fsPromises.readdir;
    const stat = fs.statSync;
    const denied = () => Object.assign(new Error(`EACCES: permission denied, scandir '${dir}'`), { code: 'EACCES' });
    const spies = [
      vi
        .spyOn(fsPromises, 'readdir')
        .mockImplementation(((p: fs.PathLike, o?: never) =>
          p === dir ? Promise.reject(denied()) : readdir(p, o)) as typeof fsPromises.readdir),
      vi
        .spyOn(fs, 'statSync')
        .mockImplementation(((p: fs.PathLike, o?: never) =>
          p === dir ? { ...stat(p), uid: 65534 } : stat(p, o)) as typeof fs.statSync),
    ];
    try {
      expect(await run('workflows', '--state-dir', stateDir)).toEqual({
        code: 1,
        out: '',
        err: `drover-agent: error: cannot read ${dir}: permission denied (run it with sudo or as nobody)\n`,
      });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('explains a missing workflows directory without failing', async () => {
    fs.rmSync(dir, { recursive: true });
    const res = await run('workflows', '--state-dir', stateDir);
    expect(res.code).toBe(0);
    expect(res.out).toBe(
      `No workflows directory at ${dir}: create it and put one workflow per .yaml file in it (see docs/agent.md).\n`,
    );
  });
});
