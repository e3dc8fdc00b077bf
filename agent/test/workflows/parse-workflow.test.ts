import { Alias } from 'yaml';
import { describe, expect, it, vi } from 'vitest';
import { parseWorkflowFile } from '../../src/workflows/parse-workflow.js';
import { formatProblem } from '../../src/workflows/format-problem.js';

const parse = (text: string) => parseWorkflowFile('deploy.yaml', text);
/** The problems as `file:line: message` lines. */
const problems = async (text: string) => (await parse(text)).problems.map(formatProblem);

const FULL = `# Deploys the web app
name: deploy
description: Builds and deploys the web app
version: 1.10
params:
  - name: target
    type: enum
    options: [staging, production]
    default: staging
    description: where to deploy
  - name: replicas
    type: number
    required: true
    min: 1
    max: 10
  - name: dry_run
    type: boolean
    default: false
  - name: ref
    type: string
    pattern: '^v[0-9]+'
secrets:
  - DEPLOY_TOKEN
timeout: 10m
steps:
  - name: build
    run: make
    args: [-j, 4, build]
    env:
      PORT: 8080
      MODE: "release"
    cwd: app
    timeout: 90
  - name: ship
    run: ./ship.sh "$TARGET"
    shell: true
    timeout: 1h30m
`;

describe('parseWorkflowFile', () => {
  it('turns a complete file into the definition reported to the coordinator', async () => {
    const parsed = await parse(FULL);
    expect(parsed.problems).toEqual([]);
    expect(parsed.nameLine).toBe(2);
    expect(parsed.definition).toEqual({
      name: 'deploy',
      description: 'Builds and deploys the web app',
      version: '1.10', // as written, not the number 1.1
      paramsSchema: [
        {
          name: 'target',
          type: 'enum',
          options: ['staging', 'production'],
          default: 'staging',
          description: 'where to deploy',
        },
        { name: 'replicas', type: 'number', required: true, min: 1, max: 10 },
        { name: 'dry_run', type: 'boolean', default: false },
        { name: 'ref', type: 'string', pattern: '^v[0-9]+' },
      ],
      secretsKeys: ['DEPLOY_TOKEN'],
      timeout: 600_000,
      steps: [
        {
          name: 'build',
          run: 'make',
          args: ['-j', '4', 'build'],
          env: { PORT: '8080', MODE: 'release' },
          cwd: 'app',
          timeout: 90_000,
        },
        { name: 'ship', run: './ship.sh "$TARGET"', shell: true, timeout: 5_400_000 },
      ],
    });
  });

  it('accepts the smallest workflow: a name and one step', async () => {
    expect((await parse('name: hello\nsteps:\n  - run: echo\n')).definition).toEqual({
      name: 'hello',
      steps: [{ run: 'echo' }],
    });
  });

  it('names the file, the line and the path of a bad duration', async () => {
    const text = FULL.replace('timeout: 90\n', 'timeout: soon\n');
    expect(await problems(text)).toEqual([
      'deploy.yaml:33: steps[0].timeout: expected a duration like 30s, 5m or a number of seconds, got `soon`',
    ]);
    expect((await parse(text)).definition).toBeNull();
  });

  it('reads `cancelGrace` as a duration of at most an hour, naming the line of a bad one', async () => {
    const wf = (grace: string) => `name: x\ncancelGrace: ${grace}\nsteps:\n  - run: a\n`;
    expect((await parse(wf('30s'))).definition).toEqual({ name: 'x', cancelGrace: 30_000, steps: [{ run: 'a' }] });
    expect((await parse(wf('1h'))).definition?.cancelGrace).toBe(3_600_000);
    expect(await problems(wf('soon'))).toEqual([
      'deploy.yaml:2: cancelGrace: expected a duration like 30s, 5m or a number of seconds, got `soon`',
    ]);
    expect(await problems(wf('2h'))).toEqual(['deploy.yaml:2: cancelGrace: must be at most 1h, got `2h`']);
    expect(await problems(wf('0'))).toEqual(['deploy.yaml:2: cancelGrace: must be at least 1ms, got `0`']);
  });

  it('refuses unknown keys at every level, suggesting the key that was probably meant', async () => {
    const text =
      'name: x\ntimout: 5s\nsteps:\n  - run: a\n    tiemout: 5s\nparams:\n  - name: p\n    type: string\n    requried: true\n';
    expect(await problems(text)).toEqual([
      'deploy.yaml:2: timout: unknown key (did you mean `timeout`?); expected one of name, description, version, params, secrets, timeout, cancelGrace, steps',
      'deploy.yaml:5: steps[0].tiemout: unknown key (did you mean `timeout`?); expected one of name, run, args, env, cwd, timeout, shell',
      expect.stringMatching(/^deploy\.yaml:9: params\[0\]\.requried: unknown key \(did you mean `required`\?\)/),
    ]);
  });

  it('reports missing name and steps, and an empty step list', async () => {
    expect(await problems('description: nothing else\n')).toEqual([
      'deploy.yaml:1: missing `name`: the name triggers use to run this workflow',
      'deploy.yaml:1: missing `steps`: the list of commands this workflow runs',
    ]);
    expect(await problems('name: x\nsteps: []\n')).toEqual([
      'deploy.yaml:2: steps: expected at least 1 item, got none',
    ]);
    expect(await problems('name: x\nsteps:\n  - name: no run\n')).toEqual([
      'deploy.yaml:3: steps[0]: missing `run`: the program (or, with `shell: true`, the command line) to run',
    ]);
  });

  it('reports YAML syntax errors with their line and column', async () => {
    const parsed = await parse('name: x\nsteps:\n  - run: a\n   bad: indent\n');
    expect(parsed.definition).toBeNull();
    expect(parsed.problems[0]).toMatchObject({
      file: 'deploy.yaml',
      line: 4,
      message: expect.stringMatching(/^invalid YAML: /),
    });
    expect((await parse('name: a\nname: b\nsteps: [{run: x}]\n')).problems[0]?.message).toBe(
      'invalid YAML: the key `name` stands twice in one map: keep one',
    );
    // YAML 1.1's merge key, which the parser takes for an ordinary key: said so, not "unknown key".
    expect(await problems('name: x\nbase: &b {run: a}\nsteps:\n  - <<: *b\n    timeout: 5s\n')).toContain(
      'deploy.yaml:4: steps[0].<<: merge keys (`<<: *anchor`) are not taken: write the keys out (an alias may stand for each value)',
    );
  });

  it('refuses a value written unquoted after `!` (a YAML tag), which the parser dropped, reading what followed', async () => {
    // `args: [!important x]` passed `x`, and `run: !reboot` was an empty command, without a word about the tag.
    const parsed = await parse('name: x\nsteps:\n  - run: /bin/echo\n    args: [!important x]\n');
    expect(parsed.definition).toBeNull();
    expect(parsed.problems.map((p) => `${p.file}:${p.line}: ${p.message}`)).toEqual([
      "deploy.yaml:4: invalid YAML: `!important` starts with `!`, which YAML reads as a tag, not as text: quote the value ('!...')",
    ]);
    expect((await parse('name: x\nsteps:\n  - run: /bin/echo\n    args: ["!important x"]\n')).problems).toEqual([]);
  });

  it('refuses an empty file, a file that is a list, and values of the wrong kind', async () => {
    expect(await problems('')).toEqual([
      'deploy.yaml: the file is empty; expected a workflow with at least `name` and `steps`',
    ]);
    expect(await problems('- run: a\n')).toEqual(['deploy.yaml:1: expected a map (key: value lines), got a list']);
    expect(await problems('name: x\nsteps:\n  run: a\n')).toEqual([
      'deploy.yaml:3: steps: expected a list (lines starting with `- `), got a map',
    ]);
    expect(await problems('name: x\nsteps:\n  - run: a\n    shell: yes\n    args: a b\n')).toEqual([
      'deploy.yaml:4: steps[0].shell: expected true or false, got `yes`',
      'deploy.yaml:5: steps[0].args: expected a list (lines starting with `- `), got `a b`',
    ]);
  });

  it('refuses names the coordinator would refuse', async () => {
    expect(await problems('name: -deploy\nsteps: [{run: a}]\n')).toEqual([
      'deploy.yaml:1: name: must start with a letter or digit and contain only letters, digits, `_`, `.` and `-`, got `-deploy`',
    ]);
    expect(await problems(`name: ${'x'.repeat(129)}\nsteps: [{run: a}]\n`)).toEqual([
      'deploy.yaml:1: name: must be at most 128 characters long, got 129',
    ]);
  });

  it('refuses secret and variable names that cannot be environment variables, and repeated secrets', async () => {
    expect(
      await problems('name: x\nsecrets: [API-KEY, TOKEN, TOKEN]\nsteps:\n  - run: a\n    env: {1X: a, OK: [1]}\n'),
    ).toEqual([
      expect.stringMatching(/^deploy\.yaml:2: secrets\[0\]: a secret name becomes an environment variable/),
      'deploy.yaml:2: secrets[2]: `TOKEN` is listed twice',
      expect.stringMatching(/^deploy\.yaml:5: steps\[0\]\.env\.1X: is not a valid variable name/),
      'deploy.yaml:5: steps[0].env.OK: expected a string (write an empty value as ""), got a list',
    ]);
    // A name an object cannot hold as a key (the variable would vanish), and the coordinator refuses.
    expect(await problems('name: x\nsecrets: [__proto__]\nsteps:\n  - run: a\n    env: {__proto__: a}\n')).toEqual([
      'deploy.yaml:2: secrets[0]: `__proto__` cannot be a variable name here: choose another name',
      'deploy.yaml:5: steps[0].env.__proto__: `__proto__` cannot be a variable name here: choose another name',
    ]);
    // The variable the agent finds a job's processes by after a crash: a step must not hide them.
    const mark =
      "`DROVER_JOB_ID` is set by the agent (it finds a job's processes by it after a crash): choose another name";
    expect(
      await problems('name: x\nsecrets: [DROVER_JOB_ID]\nsteps:\n  - run: a\n    env: {DROVER_JOB_ID: x}\n'),
    ).toEqual([`deploy.yaml:2: secrets[0]: ${mark}`, `deploy.yaml:5: steps[0].env.DROVER_JOB_ID: ${mark}`]);
  });

  it("applies the coordinator's paramsSchema rules, pointing at the offending key", async () => {
    const text = [
      'name: x',
      'params:',
      '  - name: size',
      '    type: number',
      '    min: 10',
      '    max: 1',
      '  - name: size',
      '    type: string',
      '    options: [a]',
      '  - name: color',
      '    type: enum',
      '    options: [red, red]',
      '    default: blue',
      '  - name: re',
      '    type: string',
      "    pattern: '('",
      '  - name: kind',
      '    type: list',
      'steps: [{run: a}]',
    ].join('\n');
    expect(await problems(text)).toEqual([
      'deploy.yaml:18: params[4].type: expected one of string, number, boolean, enum, file, got `list`',
    ]);
    const noBadType = text.replace('type: list', 'type: boolean');
    expect(await problems(noBadType)).toEqual([
      'deploy.yaml:5: params[0].min: must not be greater than max (1), got `10`',
      'deploy.yaml:7: params[1].name: duplicates params.0.name `size`',
      'deploy.yaml:9: params[1].options: does not apply to a parameter of type `string`',
      'deploy.yaml:12: params[2].options[1]: duplicates an earlier value `red` (string)',
      'deploy.yaml:16: params[3].pattern: must be a regular expression in RE2 syntax (missing closing ) at `(`); got `(` (string)',
    ]);
  });

  it('refuses two params that would set the same environment variable', async () => {
    expect(
      await problems(
        'name: x\nparams:\n  - {name: a-b, type: string}\n  - {name: a_b, type: string}\nsteps: [{run: a}]\n',
      ),
    ).toEqual([
      'deploy.yaml:4: params[1].name: `a_b` and `a-b` would both be the environment variable DROVER_PARAM_A_B; rename one',
    ]);
    expect(
      await problems('name: x\nparams:\n  - {name: v, type: string}\n  - {name: V, type: string}\nsteps: [{run: a}]\n'),
    ).toEqual([
      'deploy.yaml:4: params[1].name: `V` and `v` would both be the environment variable DROVER_PARAM_V; rename one',
    ]);
  });

  it('checks a default against its parameter', async () => {
    expect(
      await problems('name: x\nparams:\n  - {name: n, type: number, max: 5, default: 7}\nsteps: [{run: a}]\n'),
    ).toEqual(['deploy.yaml:3: params[0].default: must be at most 5, got `7` (number)']);
    // A string default written as a plain number is the text as written.
    expect(
      (await parse('name: x\nparams:\n  - {name: v, type: string, default: 1.10}\nsteps: [{run: a}]\n')).definition
        ?.paramsSchema,
    ).toEqual([{ name: 'v', type: 'string', default: '1.10' }]);
  });

  it('treats an empty optional key as absent, and follows YAML anchors', async () => {
    const text = 'name: x\ndescription:\nsteps:\n  - run: a\n    env: &common {A: "1"}\n  - run: b\n    env: *common\n';
    expect((await parse(text)).definition).toEqual({
      name: 'x',
      steps: [
        { run: 'a', env: { A: '1' } },
        { run: 'b', env: { A: '1' } },
      ],
    });
  });

  it('reads each alias without walking the whole document for it, and counts a list before reading it', async () => {
    // `Alias.resolve` walks the document up to the alias: once per alias, 25,000 took a minute.
    const walks = vi.spyOn(Alias.prototype, 'resolve');
    try {
      const step = `  - run: *prog\n    args: [${Array.from({ length: 256 }, () => '*arg').join(', ')}]\n`;
      const many = `name: x\nsteps:\n  - run: &prog echo\n    args: [&arg hi]\n${step.repeat(20)}`;
      const parsed = await parse(many);
      expect(parsed.problems).toEqual([]);
      expect(parsed.definition?.steps[20]).toEqual({ run: 'echo', args: Array.from({ length: 256 }, () => 'hi') });
      // The last anchor of a name before the alias is the one it means, as YAML says.
      const redefined = await parse('name: x\nsteps:\n  - run: &p a\n  - run: *p\n  - run: &p b\n  - run: *p\n');
      expect(redefined.definition?.steps.map((s) => s.run)).toEqual(['a', 'a', 'b', 'b']);
      expect(walks).not.toHaveBeenCalled();
    } finally {
      walks.mockRestore();
    }
    const tooMany = `name: x\nsteps:\n  - run: &a echo\n    args: [${Array.from({ length: 25_000 }, () => '*a').join(', ')}]\n`;
    expect(await problems(tooMany)).toEqual(['deploy.yaml:4: steps[0].args: expected at most 256 items, got 25000']);
  });

  it('refuses aliases that repeat more text than a file may hold, naming the alias that passes the limit', async () => {
    // 21 KB of text: one step of 256 aliased 4 KB args and 256 aliased 8 KB variables, aliased 255
    // times, would be 800 MB of definition, past what JSON.stringify can make: the report failed.
    const lines = ['name: bomb', 'steps:', '  - &step', '    run: "true"', `    args: [&a ${'x'.repeat(4096)}]`];
    lines.push(...Array.from({ length: 255 }, () => '  - *step'));
    const parsed = await parse(lines.join('\n'));
    expect(parsed.definition).toBeNull();
    expect(parsed.problems.map(formatProblem)).toEqual([
      'deploy.yaml:260: the aliases of a file may repeat at most 1048576 characters of its text in all, and the alias `*step` passes that: alias less (the file is skipped)',
    ]);
    // Problems before it are kept; what is read through no alias after it would only echo it.
    const args = `    args: [${Array.from({ length: 256 }, () => '*a').join(', ')}]`;
    const wide = ['name: wide', 'timout: 1m', 'steps:', `  - run: &a ${'y'.repeat(4000)}`, args, '  - run: b', args];
    expect(await problems(wide.join('\n'))).toEqual([
      'deploy.yaml:2: timout: unknown key (did you mean `timeout`?); expected one of name, description, version, params, secrets, timeout, cancelGrace, steps',
      'deploy.yaml:7: the aliases of a file may repeat at most 1048576 characters of its text in all, and the alias `*a` passes that: alias less (the file is skipped)',
    ]);
    // Just under the limit is read as written.
    const under = await parse(
      wide
        .slice(0, 5)
        .filter((l) => !l.startsWith('timout'))
        .join('\n'),
    );
    expect(under.problems).toEqual([]);
    expect(under.definition?.steps[0]?.args).toHaveLength(256);
  });

  it('refuses `args` on a step with `shell: true`, which would never get them', async () => {
    // `/bin/sh -c ./deploy.sh` ran without its `--dry-run`.
    expect(await problems('name: x\nsteps:\n  - run: ./deploy.sh\n    shell: true\n    args: [--dry-run]\n')).toEqual([
      'deploy.yaml:5: steps[0].args: a step with `shell: true` runs the command line of `run`, and gets no `args`: write them into `run`, or remove `shell: true` to run `run` as a program with them',
    ]);
    const fine =
      'name: x\nsteps:\n  - {run: ./deploy.sh --dry-run, shell: true, args: []}\n  - {run: ./deploy.sh, shell: false, args: [--dry-run]}\n';
    expect((await parse(fine)).definition?.steps).toEqual([
      { run: './deploy.sh --dry-run', shell: true, args: [] },
      { run: './deploy.sh', shell: false, args: ['--dry-run'] },
    ]);
  });

  it('refuses a NUL character in what a step gives its program, naming the field', async () => {
    const text = [
      'name: x',
      'steps:',
      '  - run: "echo\\0"',
      '    args: [ok, "a\\0b"]',
      '    env: {A: "x\\0"}',
      '    cwd: "/tmp\\0"',
      'params:',
      '  - {name: MODE, type: string, default: "a\\0"}',
    ].join('\n');
    expect(await problems(text)).toEqual([
      'deploy.yaml:3: steps[0].run: holds a NUL character (`\\0`, at character 5), which no program can be given',
      'deploy.yaml:4: steps[0].args[1]: holds a NUL character (`\\0`, at character 2), which no program can be given',
      'deploy.yaml:5: steps[0].env.A: holds a NUL character (`\\0`, at character 2), which no program can be given',
      'deploy.yaml:6: steps[0].cwd: holds a NUL character (`\\0`, at character 5), which no program can be given',
      'deploy.yaml:8: params[0].default: holds a NUL character (`\\0`, at character 2), which no program can be given',
    ]);
  });

  it('says a file holds one workflow when it has a second YAML document', async () => {
    expect(await problems('name: a\nsteps: [{run: x}]\n---\nname: b\nsteps: [{run: y}]\n')).toEqual([
      'deploy.yaml:3: a second YAML document starts here (after a `---` or `...` line): one workflow per file; ' +
        'move the second to a file of its own, or remove that line and what follows',
    ]);
  });
});
