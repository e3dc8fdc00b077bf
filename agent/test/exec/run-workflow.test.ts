import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jobFiles } from '../../src/exec/job-files.js';
import { firstStepCommand, type JobPlan } from '../../src/exec/run-workflow.js';
import { StepLauncher } from '../../src/exec/step-launcher.js';
import { LogShipper, MAX_LOG_TEXT } from '../../src/jobs/log-shipper.js';
import { fixture, isAlive, runJob, sh, spares, tempStateDir } from './helpers.js';
import { eventually } from '../../../test/helpers/poll.js';

/** The pieces of a secret a cut through it would leave: its beginnings and ends of 4 or more characters. */
const fragmentsOf = (secret: string): string[] =>
  Array.from({ length: secret.length - 3 }, (_, i) => [secret.slice(0, i + 4), secret.slice(-(i + 4))]).flat();

let stateDir: string;
beforeEach(() => {
  stateDir = tempStateDir();
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

describe('the executor', () => {
  it('gives every step the job variables, its params as env vars and as a JSON file, and the workspace as cwd', async () => {
    const { result, out, plan } = await runJob(
      stateDir,
      [
        sh(
          'echo "job=$DROVER_JOB_ID wf=$DROVER_WORKFLOW ref=$DROVER_REF debug=$DROVER_DEBUG"; ' +
            'echo "ws=$DROVER_WORKSPACE pwd=$(pwd)"; echo "params=$(cat "$DROVER_PARAMS_FILE" | tr -d " \\n")"; ' +
            'echo "p=$DROVER_PARAM_TARGET_ENV n=$DROVER_PARAM_REPLICAS b=$DROVER_PARAM_DRY_RUN"; echo "own=$OWN"',
          { env: { OWN: 'from the step', DROVER_REF: 'overridden by the step' } },
        ),
      ],
      { jobId: 'job-env', ref: 'main', debug: true, params: { 'target-env': 'prod', replicas: 3, dry_run: false } },
    );
    expect(result).toMatchObject({ status: 'success', exitCode: 0, errorMessage: null, output: {} });
    const workspace = fs.realpathSync(plan.files.workspace);
    expect(out).toEqual([
      'job=job-env wf=wf ref=overridden by the step debug=1',
      `ws=${plan.files.workspace} pwd=${workspace}`,
      'params={"target-env":"prod","replicas":3,"dry_run":false}',
      'p=prod n=3 b=false',
      'own=from the step',
    ]);
    expect(fs.statSync(plan.files.paramsFile).mode & 0o777).toBe(0o600);
  });

  it('runs a relative cwd inside the workspace, and a program with args without a shell', async () => {
    const { result, out } = await runJob(stateDir, [
      sh('mkdir -p sub/dir'),
      { run: 'pwd', cwd: 'sub/dir' },
      { run: 'printf', args: ['%s|', 'a b', '$HOME', '*'] },
    ]);
    expect(result.status).toBe('success');
    expect(out[0]).toMatch(/\/workspace\/sub\/dir$/);
    expect(out[1]).toBe('a b|$HOME|*|');
  });

  it('reports the first failing step with its exit code, and runs no step after it', async () => {
    const { result, out } = await runJob(stateDir, [
      sh('echo one'),
      sh('echo two; exit 3', { name: 'build' }),
      sh('echo three'),
    ]);
    expect(result).toMatchObject({ status: 'failed', exitCode: 3, errorMessage: 'step 2 (build) exited with code 3' });
    expect(out).toEqual(['one', 'two']);
  });

  it('fails a step whose program does not exist or whose cwd is missing, with a message naming the step', async () => {
    const missing = await runJob(stateDir, [{ run: 'drover-no-such-program' }]);
    expect(missing.result).toMatchObject({ status: 'failed', exitCode: null });
    expect(missing.result.errorMessage).toBe('step 1 could not start `drover-no-such-program`: command not found');
    const withArgs = await runJob(stateDir, [{ run: 'sleep 30' }]);
    expect(withArgs.result.errorMessage).toBe(
      'step 1 could not start `sleep 30`: command not found (to pass arguments, list them under `args`, or set `shell: true`)',
    );
    // It read `step 1 (x) the working directory ... does not exist`, said of a file as well.
    const noDir = await runJob(stateDir, [{ run: 'true', cwd: 'nope', name: 'x' }]);
    expect(noDir.result.errorMessage).toMatch(
      /^step 1 \(x\) could not start: the working directory .*\/workspace\/nope does not exist$/,
    );
    fs.writeFileSync(`${stateDir}/a-file`, '');
    const aFile = await runJob(stateDir, [{ run: 'true', cwd: `${stateDir}/a-file`, name: 'x' }]);
    expect(aFile.result.errorMessage).toBe(
      `step 1 (x) could not start: the working directory ${stateDir}/a-file is not a directory`,
    );
  });

  it('fails a job whose files cannot be written before its first step, saying why in words and where', async () => {
    // /dev/full answers every write with ENOSPC: the disk of the job's directory is full.
    const jobId = 'job-full-disk';
    const files = jobFiles(stateDir, jobId);
    fs.mkdirSync(files.workspace, { recursive: true });
    fs.symlinkSync('/dev/full', files.paramsFile);
    const { result, lines } = await runJob(stateDir, [sh('echo never')], { jobId });
    expect(result).toMatchObject({ status: 'failed', exitCode: null });
    // It read `could not prepare the job's workspace: ENOSPC: no space left on device, write`: no path, no advice.
    expect(result.errorMessage).toBe(
      `could not prepare the job's workspace in ${files.dir}: no space left on the device ` +
        `(ENOSPC; free some: \`df -h ${stateDir}/jobs\`)`,
    );
    expect(lines.some((l) => l.text === 'never')).toBe(false);
  });

  it('names the param whose value is too long for a variable when its step cannot start', async () => {
    const { result } = await runJob(stateDir, [{ run: 'true' }], { params: { notes: 'n'.repeat(200 * 1024) } });
    expect(result).toMatchObject({ status: 'failed', exitCode: null });
    expect(result.errorMessage).toBe(
      "step 1 could not start `true`: the variable DROVER_PARAM_NOTES (a param's value) is 204819 bytes long with " +
        'its name, and Linux starts no program with a variable or an argument over 131071 bytes (128 KiB): ' +
        'pass large values as a `file` param instead',
    );
  });

  it('collects outputs from $DROVER_OUTPUT across steps, last write winning, warning about malformed lines', async () => {
    const { result, lines } = await runJob(stateDir, [
      sh('echo "version=1.2.3" >> "$DROVER_OUTPUT"; echo "url=https://x/?a=b=c" >> "$DROVER_OUTPUT"'),
      sh(
        'printf "# a comment\\n\\nversion=1.2.4\\nnot a pair\\n9bad=x\\nartifact=file:out.tar\\n" >> "$DROVER_OUTPUT"',
      ),
    ]);
    expect(result.status).toBe('success');
    expect(result.output).toEqual({ version: '1.2.4', url: 'https://x/?a=b=c', artifact: 'file:out.tar' });
    const warnings = lines.filter((l) => l.level === 'warn').map((l) => l.text);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/\$DROVER_OUTPUT line 6 is not key=value/);
    expect(warnings[1]).toMatch(/\$DROVER_OUTPUT line 7 has an unusable key "9bad"/);
  });

  it('keeps the outputs written before a failing step', async () => {
    const { result } = await runJob(stateDir, [sh('echo a=1 >> "$DROVER_OUTPUT"; exit 1')]);
    expect(result).toMatchObject({ status: 'failed', exitCode: 1, output: { a: '1' } });
  });

  it('fails a job whose output is too large to report, pointing at file: outputs', async () => {
    const { result } = await runJob(stateDir, [
      sh(
        `head -c ${300 * 1024} /dev/zero | tr '\\0' y | sed 's/^/big=/' >> "$DROVER_OUTPUT"; echo >> "$DROVER_OUTPUT"`,
      ),
    ]);
    expect(result).toMatchObject({ status: 'failed', exitCode: null, output: {} });
    expect(result.errorMessage).toMatch(
      /^the output is \d+ bytes as JSON, more than the 262144 a job may report; .*file:/,
    );
    const { result: fits } = await runJob(stateDir, [sh(`printf 'ok=%0${200 * 1024}d\\n' 0 >> "$DROVER_OUTPUT"`)]);
    expect(fits.status).toBe('success');
    expect((fits.output.ok as string).length).toBe(200 * 1024);
  });

  it('fails a job whose output file a step replaced or made too large, saying so, without waiting on a pipe', async () => {
    const { result: piped } = await runJob(stateDir, [sh('rm "$DROVER_OUTPUT"; mkfifo "$DROVER_OUTPUT"')]);
    expect(piped).toMatchObject({ status: 'failed', exitCode: null, output: {} });
    expect(piped.errorMessage).toMatch(/^\$DROVER_OUTPUT is no longer a regular file but a named pipe \(FIFO\)/);
    const { result: huge, lines } = await runJob(stateDir, [
      sh('echo first=1 >> "$DROVER_OUTPUT"; truncate -s 600M "$DROVER_OUTPUT"'),
    ]);
    expect(huge).toMatchObject({ status: 'failed', exitCode: null, output: {} });
    expect(huge.errorMessage).toMatch(/^\$DROVER_OUTPUT is 629145600 bytes, more than the 1048576 the agent reads/);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.text)).toEqual([`error: ${huge.errorMessage}`]);
  });

  it('splits output into lines correctly when lines arrive in pieces', async () => {
    const { out } = await runJob(stateDir, [{ run: process.execPath, args: [fixture('partial-lines.mjs')] }]);
    expect(out).toEqual(['hello', 'world', 'price: 5€', 'no newline at the end']);
  });

  it('masks secret values in log lines, outputs and the error message, and gives only the listed secrets', async () => {
    const { result, lines } = await runJob(
      stateDir,
      [
        sh(
          'echo "token is $API_TOKEN"; echo "other=${OTHER_SECRET:-unset}"; echo "t=$API_TOKEN" >> "$DROVER_OUTPUT"; echo s3cr3t-value >&2; exit 4',
          { name: 'use s3cr3t-value' },
        ),
      ],
      {
        workflow: { secretsKeys: ['API_TOKEN'] },
        secrets: { API_TOKEN: 's3cr3t-value', OTHER_SECRET: 'hunter2' },
      },
    );
    const all = lines.map((l) => l.text).join('\n');
    expect(all).not.toContain('s3cr3t-value');
    expect(lines.filter((l) => l.stream !== 'system').map((l) => [l.stream, l.text])).toEqual([
      ['stdout', 'token is ***'],
      ['stdout', 'other=unset'],
      ['stderr', '***'],
    ]);
    expect(result.output).toEqual({ t: '***' });
    expect(result.errorMessage).toBe('step 1 (use ***) exited with code 4');
  });

  it('masks a secret value that straddles the 64 KiB cut of a long line, line ended or not', async () => {
    const secret = 'S3CR3T-T0K3N-VALUE-0123456789';
    // No newline at all: the line is cut while it is still being written (the open-line path).
    const open = `process.stdout.write('a'.repeat(65530) + ${JSON.stringify(secret)} + 'b'.repeat(65536) + ${JSON.stringify(secret)} + 'c')`;
    // One whole line longer than the limit (the ended-line path).
    const ended = `process.stdout.write('d'.repeat(65530) + ${JSON.stringify(secret)} + 'e\\n')`;
    const { out } = await runJob(
      stateDir,
      [
        { run: process.execPath, args: ['-e', open] },
        { run: process.execPath, args: ['-e', ended] },
      ],
      { secrets: { TOKEN: secret } },
    );
    expect(out.length).toBeGreaterThan(3); // it was cut
    expect(out.every((line) => line.length <= 65_536)).toBe(true);
    for (const line of out) expect(fragmentsOf(secret).filter((f) => line.includes(f))).toEqual([]);
    expect(out.join('')).toBe(`${'a'.repeat(65530)}***${'b'.repeat(65536)}***c${'d'.repeat(65530)}***e`);
  });

  it('masks a secret value that straddles the 16 KiB cut of a line sent to the coordinator', async () => {
    const secret = 'another-s3cret-value';
    const sent: string[] = [];
    const shipper = new LogShipper('job', (report) => {
      if (report.kind === 'logs') sent.push(...report.body.lines.map((l) => l.text));
    });
    const { lines } = await runJob(
      stateDir,
      [
        {
          run: process.execPath,
          args: ['-e', `console.log('x'.repeat(${MAX_LOG_TEXT - 5}) + ${JSON.stringify(secret)} + 'y'.repeat(100))`],
        },
      ],
      { secrets: { S: secret }, onLine: (line) => shipper.add(line) },
    );
    shipper.flush();
    expect(lines.some((l) => l.text.length > MAX_LOG_TEXT)).toBe(true);
    const output = sent.filter((text) => /^[x*y]+$/.test(text));
    expect(output.length).toBe(2);
    for (const text of sent) expect(fragmentsOf(secret).filter((f) => text.includes(f))).toEqual([]);
    expect(output.join('')).toBe(`${'x'.repeat(MAX_LOG_TEXT - 5)}***${'y'.repeat(100)}`);
  });

  it('masks secret values in output keys, and says when two keys become one', async () => {
    const { result, lines } = await runJob(
      stateDir,
      [
        sh(
          'echo "url_one-s3cret=a" >> "$DROVER_OUTPUT"; echo "url_two-s3cret=b" >> "$DROVER_OUTPUT"; ' +
            'echo "plain=one-s3cret" >> "$DROVER_OUTPUT"; echo "not a pair one-s3cret" >> "$DROVER_OUTPUT"',
        ),
      ],
      { secrets: { ONE: 'one-s3cret', TWO: 'two-s3cret' } },
    );
    expect(result.output).toEqual({ 'url_***': 'b', plain: '***' });
    const all = lines.map((l) => l.text).join('\n');
    expect(all).toContain('two output keys read `url_***` once secret values are masked; the last one is kept');
    expect(all).toContain('is not key=value and was ignored: "not a pair ***"');
    expect(all).not.toMatch(/s3cret/);
  });

  it('fails before the first step when a listed secret is missing or the secrets file was refused', async () => {
    const marker = `${stateDir}/ran`;
    const missing = await runJob(stateDir, [sh(`touch ${marker}`)], {
      workflow: { secretsKeys: ['A', 'B'] },
      secrets: { A: 'x' },
    });
    expect(missing.result).toMatchObject({ status: 'failed', exitCode: null });
    expect(missing.result.errorMessage).toMatch(
      /the secret B listed by the workflow is not in the agent's secrets file/,
    );
    const refused = await runJob(stateDir, [sh(`touch ${marker}`)], {
      workflow: { secretsKeys: ['A'] },
      secrets: {},
      secretsProblem: 'secrets.yaml must be mode 0600 (it is 0644)',
    });
    expect(refused.result.errorMessage).toMatch(/needs the secret A but the agent's secrets file was refused: .*0600/);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('fails before the first step when two params would set the same variable, whatever the coordinator let through', async () => {
    const marker = `${stateDir}/ran`;
    const { result } = await runJob(stateDir, [sh(`echo "$DROVER_PARAM_SAFE" > ${marker}`)], {
      workflow: { paramsSchema: [{ name: 'safe', type: 'string', pattern: '^[a-z]+$' }] },
      params: { safe: 'ok', SAFE: 'x; touch /tmp/p' },
    });
    expect(result).toMatchObject({ status: 'failed', exitCode: null });
    expect(result.errorMessage).toBe(
      'the params `SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE; no step was run',
    );
    expect(fs.existsSync(marker)).toBe(false);
  });
});

describe('with a step launcher', () => {
  it("runs the first step in the launcher's spare and the next one spawned, with the same environment", async () => {
    const launcher = new StepLauncher();
    launcher.warm();
    try {
      const [spare] = spares();
      const probe = { run: process.execPath, args: [fixture('describe-process.mjs')] };
      const { result, out } = await runJob(stateDir, [probe, probe], { launcher, params: { target: 'prod' } });
      expect(result.status).toBe('success');
      const [first, second] = out.map((line) => JSON.parse(line) as { pid?: number; env: Record<string, string> });
      expect(first!.pid).toBe(spare);
      expect(second!.pid).not.toBe(spare);
      delete first!.pid;
      delete second!.pid;
      expect(first).toEqual(second);
      expect(first!.env).toMatchObject({ DROVER_PARAM_TARGET: 'prod' });
    } finally {
      launcher.close();
    }
  });
});

describe('a first step held ready', () => {
  it('starts the first step from the process held for it, and ends a held one unrun when the job ends before it', async () => {
    const launcher = new StepLauncher();
    try {
      launcher.warm();
      const [spare] = spares();
      const probe = { run: process.execPath, args: [fixture('describe-process.mjs')] };
      const { result, out } = await runJob(stateDir, [probe], {
        launcher,
        params: { target: 'prod' },
        holdFirst: true,
      });
      expect(result.status).toBe('success');
      const seen = JSON.parse(out[0]!) as { pid: number; env: Record<string, string> };
      expect(seen.pid).toBe(spare); // the held process itself: launch had no spare left to take
      expect(seen.env).toMatchObject({ DROVER_PARAM_TARGET: 'prod', DROVER_JOB_ID: expect.any(String) });

      launcher.warm();
      const [next] = spares();
      const cancel = new AbortController();
      cancel.abort('cancelled: a user cancelled the job');
      const cancelled = await runJob(stateDir, [sh('echo never')], { launcher, holdFirst: true, abort: cancel.signal });
      expect(cancelled.result.status).toBe('cancelled');
      expect(cancelled.out).toEqual([]);
      await eventually(() => !isAlive(next!));
    } finally {
      launcher.close();
    }
  });

  it('is not held when the first step is not known ahead: input files to fetch, a param clash, a missing secret', () => {
    const plan = (overrides: Partial<JobPlan>): JobPlan => ({
      jobId: 'job-1',
      workflow: { name: 'wf', steps: [sh('true')] },
      params: {},
      ref: null,
      debug: false,
      timeoutMs: null,
      files: jobFiles(stateDir, 'job-1'),
      secrets: {},
      killGraceMs: 300,
      ...overrides,
    });
    expect(firstStepCommand(plan({}))).toMatchObject({ file: 'true', shell: true });
    expect(firstStepCommand(plan({ params: { safe: 1, SAFE: 2 } }))).toBeNull();
    expect(
      firstStepCommand(plan({ workflow: { name: 'wf', steps: [sh('true')], secretsKeys: ['TOKEN'] } })),
    ).toBeNull();
    expect(firstStepCommand(plan({ workflow: { name: 'wf', steps: [] } }))).toBeNull();
    const transfer = {} as NonNullable<JobPlan['transfer']>;
    const input = { __type: 'FileRef', id: 'file-1', downloadUrl: 'http://127.0.0.1:1/f' };
    expect(firstStepCommand(plan({ transfer, params: { input } }))).toBeNull();
  });
});

describe('timeouts', () => {
  it("kills the step's whole process group when the step's timeout passes, grandchildren included", async () => {
    const pidFile = `${stateDir}/grandchild.pid`;
    const startedAt = Date.now();
    const { result, out } = await runJob(stateDir, [
      { name: 'hang', run: fixture('spawn-grandchild.sh'), args: [pidFile], timeout: 400 },
      sh('echo never'),
    ]);
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(result).toMatchObject({
      status: 'timed_out',
      exitCode: null,
      errorMessage: "step 1 (hang) timed out after 400ms (the step's timeout)",
    });
    expect(out).toEqual(['grandchild started']);
    const grandchild = Number(fs.readFileSync(pidFile, 'utf8'));
    await eventually(() => !isAlive(grandchild), 2000);
  });

  it('applies the smaller of the step timeout and what is left of the job timeout', async () => {
    const { result } = await runJob(
      stateDir,
      [sh('sleep 0.3', { name: 'a' }), sh('sleep 5', { name: 'b', timeout: 10_000 })],
      {
        timeoutMs: 800,
      },
    );
    expect(result.status).toBe('timed_out');
    expect(result.errorMessage).toBe("the job timed out after 800ms (the workflow's timeout) during step 2 (b)");
  });

  it('sends SIGKILL after the grace when a step ignores SIGTERM', async () => {
    const startedAt = Date.now();
    const { result } = await runJob(stateDir, [{ run: fixture('ignore-term.sh'), timeout: 300 }], { killGraceMs: 300 });
    expect(result.status).toBe('timed_out');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(550);
  });

  it('does not let a background process left behind by a finished step hold the job open', async () => {
    const pidFile = `${stateDir}/bg.pid`;
    const startedAt = Date.now();
    const { result } = await runJob(stateDir, [sh(`sleep 300 & echo $! > ${pidFile}; echo done`)]);
    expect(result.status).toBe('success');
    expect(Date.now() - startedAt).toBeLessThan(3000);
    await eventually(() => !isAlive(Number(fs.readFileSync(pidFile, 'utf8'))), 2000);
  });

  it('ends a timed-out step whose output is held by a process that left its group (setsid)', async () => {
    const pidFile = `${stateDir}/escaped.pid`;
    const untilEscaped = `while [ ! -s ${pidFile} ]; do sleep 0.01; done;`;
    const startedAt = Date.now();
    try {
      // The escaped `sleep` keeps the step's stdout and stderr open for 60 s (its pid is written
      // once it left the group).
      const { result, out } = await runJob(stateDir, [
        sh(`setsid sh -c 'echo $$ > ${pidFile}; exec sleep 60' & ${untilEscaped} echo started; sleep 60`, {
          name: 'hang',
          timeout: 1000,
        }),
      ]);
      expect(result).toMatchObject({
        status: 'timed_out',
        errorMessage: "step 1 (hang) timed out after 1s (the step's timeout)",
      });
      expect(out).toEqual(['started']);
      expect(Date.now() - startedAt).toBeLessThan(10_000);
    } finally {
      process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
    }
  });
});

describe('cancellation', () => {
  it('kills the running step and reports the job cancelled with the reason', async () => {
    const controller = new AbortController();
    const pidFile = `${stateDir}/grandchild.pid`;
    const running = runJob(stateDir, [{ name: 'long', run: fixture('spawn-grandchild.sh'), args: [pidFile] }], {
      abort: controller.signal,
    });
    await eventually(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '');
    controller.abort('the agent is shutting down');
    const { result } = await running;
    expect(result).toMatchObject({
      status: 'cancelled',
      exitCode: null,
      errorMessage: 'the agent is shutting down; step 1 (long) was stopped',
    });
    await eventually(() => !isAlive(Number(fs.readFileSync(pidFile, 'utf8'))), 2000);
  });

  it('ends a cancelled step whose output is held by a process that left its group (setsid)', async () => {
    const controller = new AbortController();
    const pidFile = `${stateDir}/escaped.pid`;
    try {
      const running = runJob(
        stateDir,
        [sh(`setsid sh -c 'echo $$ > ${pidFile}; exec sleep 60' & sleep 60`, { name: 'long' })],
        {
          abort: controller.signal,
        },
      );
      await eventually(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'));
      const stoppedAt = Date.now();
      controller.abort('cancelled by a user');
      const { result } = await running;
      expect(result).toMatchObject({
        status: 'cancelled',
        errorMessage: 'cancelled by a user; step 1 (long) was stopped',
      });
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    } finally {
      process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
    }
  });
});
