import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  spawnStep,
  startRefusal,
  StepLauncher,
  type StepCommand,
  type StepProcess,
} from '../../src/exec/step-launcher.js';
import { fixture, isAlive, spares, tempStateDir } from './helpers.js';
import { eventually, eventuallySync } from '../../../test/helpers/poll.js';

let dir: string;
let launcher: StepLauncher;
beforeEach(() => {
  dir = tempStateDir();
  launcher = new StepLauncher();
});
afterEach(async () => {
  launcher.close();
  fs.rmSync(dir, { recursive: true, force: true });
  // A closed launcher's spare exits soon after, not at once: the next test counts spares.
  await eventually(() => spares().length === 0, 5_000, 'the spares of the closed launcher to exit');
});

async function outcome(
  child: StepProcess,
): Promise<{ stdout: string; stderr: string; exitCode?: number; code?: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const result = await child;
  return {
    stdout,
    stderr,
    ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
    ...(result.code ? { code: result.code } : {}),
  };
}

const describeProcess = (env: Record<string, string> = {}): StepCommand => ({
  file: process.execPath,
  args: [fixture('describe-process.mjs'), 'it\'s "quoted"', '$HOME *', ''],
  shell: false,
  cwd: dir,
  env,
});

/** What the step saw, through the launcher's spare (checked to be the spare) and spawned directly. */
async function bothWays(command: StepCommand): Promise<[unknown, unknown]> {
  launcher.warm();
  const [spare] = spares();
  expect(spare).toBeDefined();
  const launched = launcher.launch(command);
  expect(launched.pid).toBe(spare);
  const viaSpare = await outcome(launched);
  const direct = await outcome(spawnStep(command));
  expect(viaSpare.stderr).toBe('');
  const [seen, spawned] = [viaSpare, direct].map((o) => JSON.parse(o.stdout) as { pid?: number });
  expect(seen!.pid).toBe(spare); // the step's own process: the spare exec'd it
  delete seen!.pid;
  delete spawned!.pid;
  return [seen, spawned];
}

describe('the step launcher', () => {
  it('starts a step through its spare exactly as spawnStep does: argv, environment, cwd, process group, descriptors, signals', async () => {
    const env = {
      DROVER_JOB_ID: 'job-1',
      HOME: '/overridden/home', // a variable the agent has too
      TRICKY: 'it\'s "x"\n$HOME `id` \\ * ünï',
      EMPTY: '',
    };
    const [viaSpare, direct] = await bothWays(describeProcess(env));
    expect(viaSpare).toEqual(direct);
    expect(viaSpare).toMatchObject({
      argv: ['it\'s "quoted"', '$HOME *', ''],
      cwd: fs.realpathSync(dir),
      leadsGroup: true,
      stdin: '/dev/null',
      env: { ...env, PWD: process.env.PWD },
    });
  });

  it("gives the step the agent's environment of the moment, not the one its spare was forked with", async () => {
    process.env.DROVER_LAUNCHER_TEST_ADDED = 'added after the fork';
    const removed = process.env.DROVER_LAUNCHER_TEST_REMOVED;
    process.env.DROVER_LAUNCHER_TEST_REMOVED = 'there at the fork';
    try {
      launcher.warm();
      process.env.DROVER_LAUNCHER_TEST_CHANGED = 'changed';
      delete process.env.DROVER_LAUNCHER_TEST_REMOVED;
      const [viaSpare, direct] = await bothWays(describeProcess());
      expect(viaSpare).toEqual(direct);
      const seen = (viaSpare as { env: Record<string, string> }).env;
      expect(seen.DROVER_LAUNCHER_TEST_ADDED).toBe('added after the fork');
      expect(seen.DROVER_LAUNCHER_TEST_CHANGED).toBe('changed');
      expect(seen).not.toHaveProperty('DROVER_LAUNCHER_TEST_REMOVED');
    } finally {
      delete process.env.DROVER_LAUNCHER_TEST_ADDED;
      delete process.env.DROVER_LAUNCHER_TEST_CHANGED;
      if (removed !== undefined) process.env.DROVER_LAUNCHER_TEST_REMOVED = removed;
    }
  });

  it('runs a shell step through its spare with its exit code and both output streams', async () => {
    launcher.warm();
    const [spare] = spares();
    const child = launcher.launch({
      file: 'echo "out $X"; echo err >&2; exit 3',
      args: [],
      shell: true,
      cwd: dir,
      env: { X: 'y' },
    });
    expect(child.pid).toBe(spare);
    expect(await outcome(child)).toEqual({ stdout: 'out y\n', stderr: 'err\n', exitCode: 3 });
  });

  it('spawns directly, and ends the spare, when the program is not found, a variable name is not a shell name, or the shell owns the variable', async () => {
    launcher.warm();
    const [spare] = spares();
    const missing = await outcome(
      launcher.launch({ file: 'drover-no-such-program', args: [], shell: false, cwd: dir, env: {} }),
    );
    expect(missing.code).toBe('ENOENT');
    await eventually(() => !isAlive(spare!));

    launcher.warm();
    const [second] = spares();
    const named = launcher.launch({ ...describeProcess({ 'not-a-shell-name': 'kept' }) });
    expect(named.pid).not.toBe(second);
    const seen = JSON.parse((await outcome(named)).stdout) as { env: Record<string, string> };
    expect(seen.env['not-a-shell-name']).toBe('kept');
    await eventually(() => !isAlive(second!));

    // dash would reset IFS and PPID and drop OPTIND (and its `read` of fd 3 sets the gate
    // variable): such a step is spawned as well
    for (const name of ['IFS', 'PPID', 'OPTIND', 'LINENO', 'DROVER_SPARE_GATE']) {
      launcher.warm();
      const [spare] = spares();
      const child = launcher.launch(describeProcess({ [name]: 'a b' }));
      expect(child.pid).not.toBe(spare);
      const env = (JSON.parse((await outcome(child)).stdout) as { env: Record<string, string> }).env;
      expect(env[name]).toBe('a b');
    }
  });

  it('holds a step just before its exec: it runs only once let go, and a dropped one never runs', async () => {
    const marker = path.join(dir, 'ran');
    const touch = (file: string): StepCommand => ({
      file: '/bin/sh',
      args: ['-c', 'echo ran > "$1"', 'sh', file],
      shell: false,
      cwd: dir,
      env: {},
    });
    launcher.warm();
    const [spare] = spares();
    const held = launcher.hold(touch(marker));
    expect(held).not.toBeNull();
    expect(spares()).toEqual([spare]); // still the shell, waiting
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fs.existsSync(marker)).toBe(false);
    expect(held!.went).toBe(false);
    const child = held!.go();
    expect(child.pid).toBe(spare);
    expect(held!.went).toBe(true);
    expect(held!.go()).toBe(child); // the same process: it was let go once
    expect(await outcome(child)).toEqual({ stdout: '', stderr: '', exitCode: 0 });
    expect(fs.readFileSync(marker, 'utf8')).toBe('ran\n');

    launcher.warm();
    const [second] = spares();
    const dropped = launcher.hold(touch(`${marker}-dropped`));
    dropped!.drop();
    dropped!.drop(); // harmless
    expect(() => dropped!.go()).toThrow(/dropped/);
    await eventually(() => !isAlive(second!));
    expect(fs.existsSync(`${marker}-dropped`)).toBe(false);
  });

  it("launches a held step when it is the step's very command, and drops it for another", async () => {
    launcher.warm();
    const [spare] = spares();
    const held = launcher.hold(describeProcess({ CHOICE: 'held' }));
    const other = launcher.launch(describeProcess({ CHOICE: 'other' }), held);
    expect(other.pid).not.toBe(spare); // spawned: the spare was the held one
    const seen = JSON.parse((await outcome(other)).stdout) as { env: Record<string, string> };
    expect(seen.env.CHOICE).toBe('other');
    await eventually(() => !isAlive(spare!)); // it ended unrun

    launcher.warm();
    const [next] = spares();
    const same = launcher.hold(describeProcess({ CHOICE: 'same' }));
    const launched = launcher.launch(describeProcess({ CHOICE: 'same' }), same);
    expect(launched.pid).toBe(next);
    const ran = JSON.parse((await outcome(launched)).stdout) as { env: Record<string, string> };
    expect(ran.env.CHOICE).toBe('same');

    // Let go ahead of its launch (the job's first step, once its start is answered): taken up as
    // it is, and a launch of another command is refused with the early one killed.
    launcher.warm();
    const [early] = spares();
    const ahead = launcher.hold(describeProcess({ CHOICE: 'early' }));
    const goneAhead = ahead!.go();
    expect(launcher.launch(describeProcess({ CHOICE: 'early' }), ahead)).toBe(goneAhead);
    ahead!.drop(); // nothing once a launch took it up
    expect(JSON.parse((await outcome(goneAhead)).stdout).env.CHOICE).toBe('early');
    launcher.warm();
    const [wrong] = spares();
    const sleeper: StepCommand = { file: '/bin/sleep', args: ['30'], shell: false, cwd: os.tmpdir(), env: {} };
    const mismatched = launcher.hold(sleeper);
    expect(mismatched!.go().pid).toBe(wrong);
    expect(() => launcher.launch(describeProcess({ CHOICE: 'other' }), mismatched)).toThrow(/differs/);
    await eventually(() => !isAlive(wrong!)); // killed, not left for its 30 s
    expect(early).not.toBe(wrong);
    // Let go and never taken up (the job failed in between): its drop kills it.
    launcher.warm();
    const [untracked] = spares();
    const letGo = launcher.hold(sleeper);
    expect(letGo!.go().pid).toBe(untracked);
    letGo!.drop();
    await eventually(() => !isAlive(untracked!));

    // A held shell killed meanwhile (an operator's pkill, the OOM killer): the step is spawned.
    launcher.warm();
    const [killed] = spares();
    const gone = launcher.hold(describeProcess({ CHOICE: 'killed' }));
    process.kill(killed!, 'SIGKILL');
    await eventually(() => !isAlive(killed!));
    const spawned = launcher.launch(describeProcess({ CHOICE: 'killed' }), gone);
    expect(spawned.pid).not.toBe(killed);
    expect((await outcome(spawned)).exitCode).toBe(0);
  });

  it('keeps one spare, and after close ends it and spawns every step directly', async () => {
    launcher.warm();
    launcher.warm();
    const running = spares();
    expect(running).toHaveLength(1);
    launcher.close();
    await eventually(() => !isAlive(running[0]!));
    launcher.warm();
    expect(spares()).toEqual([]);
    const direct = await outcome(launcher.launch({ file: 'echo direct', args: [], shell: true, cwd: dir, env: {} }));
    expect(direct).toEqual({ stdout: 'direct\n', stderr: '', exitCode: 0 });
  });

  it('replaces a spare that died before it was needed, even before the agent reaped it', async () => {
    launcher.warm();
    const [spare] = spares();
    process.kill(spare!, 'SIGKILL');
    // No turn of the event loop until it is a zombie: the agent has not seen it die.
    eventuallySync(
      () => fs.readFileSync(`/proc/${spare}/stat`, 'utf8').split(') ')[1]![0] === 'Z',
      5000,
      'the spare to die',
    );
    const child = launcher.launch({ file: 'echo fine', args: [], shell: true, cwd: dir, env: {} });
    expect(child.pid).not.toBe(spare);
    expect(await outcome(child)).toEqual({ stdout: 'fine\n', stderr: '', exitCode: 0 });
  });

  it('spawns directly where the exec would fail, so that the error names the cause', async () => {
    const script = (name: string, text: string) => {
      fs.writeFileSync(path.join(dir, name), text, { mode: 0o755 });
      return `./${name}`;
    };
    const cases: [StepCommand, string][] = [
      [{ ...describeProcess(), file: script('crlf.sh', '#!/bin/sh\r\necho hi\r\n'), args: [] }, 'ENOENT'],
      [{ ...describeProcess(), file: script('nointerp.sh', '#!/no/such/interpreter\n'), args: [] }, 'ENOENT'],
      [describeProcess({ HUGE: 'x'.repeat(200 * 1024) }), 'E2BIG'],
    ];
    for (const [command, code] of cases) {
      launcher.warm();
      const [spare] = spares();
      const child = launcher.launch(command);
      expect(child.pid).not.toBe(spare);
      expect((await outcome(child)).code).toBe(code);
    }
  });

  it('says which variable or argument the system refused to start a step with, and the limit', async () => {
    // What the system answers (the start fails), and what the step's failure says of it (run-step.ts).
    const refusal = async (command: StepCommand) => {
      const result = await launcher.launch(command);
      return { code: result.code, message: startRefusal(command, result.code === 'E2BIG') };
    };
    launcher.warm();
    // Linux: at most 131072 bytes for `NAME=value` and its NUL (MAX_ARG_STRLEN).
    const notes = 'x'.repeat(131_072 - 'DROVER_PARAM_NOTES='.length);
    expect(await refusal(describeProcess({ DROVER_PARAM_NOTES: notes }))).toEqual({
      code: 'E2BIG',
      message:
        "the variable DROVER_PARAM_NOTES (a param's value) is 131072 bytes long with its name, and Linux starts no " +
        'program with a variable or an argument over 131071 bytes (128 KiB): pass large values as a `file` param instead',
    });
    expect(await refusal({ ...describeProcess(), args: ['a', 'y'.repeat(200_000)] })).toEqual({
      code: 'E2BIG',
      message:
        'the argument args[1] is 200000 bytes long, and Linux starts no program with a variable or an argument ' +
        'over 131071 bytes (128 KiB): pass large values in a file instead',
    });
    // Each under the limit, together over it (a quarter of the stack limit, at most 6 MiB).
    const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`BIG_${i}`, 'z'.repeat(100_000 + i)]));
    expect(await refusal(describeProcess(many))).toEqual({
      code: 'E2BIG',
      message: expect.stringMatching(
        /^the arguments and variables together are \d+ bytes, more than Linux gives a program at its start \(a quarter of the stack limit, `ulimit -s`: 2 MiB by default\); the largest is the variable BIG_79 \(100086 bytes\): pass large values in a file instead$/,
      ),
    });
    // Node refuses a NUL character, and quoted the whole value: a secret's, perhaps.
    expect(await refusal(describeProcess({ TOKEN: 's3cr3t\0' }))).toEqual({
      code: 'ERR_INVALID_ARG_VALUE',
      message: 'the variable TOKEN holds a NUL character (`\\0`), which no program can be given',
    });
    // A step that starts has nothing to explain.
    expect((await outcome(launcher.launch(describeProcess({ SMALL: notes.slice(1) })))).exitCode).toBe(0);
  });

  it("forks no spare while the agent's own environment has a name the shell would drop", async () => {
    process.env['drover.launcher-test'] = 'kept';
    try {
      launcher.warm();
      expect(spares()).toEqual([]);
      const seen = JSON.parse((await outcome(launcher.launch(describeProcess()))).stdout) as {
        env: Record<string, string>;
      };
      expect(seen.env['drover.launcher-test']).toBe('kept');
    } finally {
      delete process.env['drover.launcher-test'];
    }
  });

  it('does not keep the agent running while its spare is idle, and the spare ends with it', async () => {
    const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
    const child = execa(
      process.execPath,
      ['--conditions=drover-source', '--import', 'tsx', fixture('warm-launcher.ts')],
      { cwd: repoRoot, reject: false, timeout: 20_000 },
    );
    const result = await child;
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    const spare = Number(/^warmed (\d+)$/.exec(String(result.stdout))?.[1]);
    expect(spare).toBeGreaterThan(0);
    await eventually(() => !isAlive(spare));
  });
});
