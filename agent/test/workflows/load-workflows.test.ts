import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAX_SET_PATTERNS } from '@drover/shared';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadWorkflows, MAX_WORKFLOW_FILE_BYTES } from '../../src/workflows/load-workflows.js';
import { formatProblem } from '../../src/workflows/format-problem.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-workflows-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string) => fs.writeFileSync(path.join(dir, name), text);
const workflow = (name: string) => `name: ${name}\nsteps:\n  - run: echo\n    args: [${name}]\n`;

describe('loadWorkflows', () => {
  it('loads every .yaml and .yml file, in file name order, and ignores other files', async () => {
    write('b.yml', workflow('beta'));
    write('a.yaml', workflow('alpha'));
    write('C.YAML', workflow('gamma'));
    write('notes.txt', 'not a workflow');
    write('deploy.yaml~', 'editor backup');
    write('.#a.yaml', 'emacs lock file');
    write('.hidden.yaml', 'name: [');
    fs.mkdirSync(path.join(dir, 'sub.yaml'));
    const loaded = await loadWorkflows(dir);
    expect(loaded.problems).toEqual([]);
    expect(loaded.workflows.map((w) => [w.file, w.definition.name])).toEqual([
      ['C.YAML', 'gamma'],
      ['a.yaml', 'alpha'],
      ['b.yml', 'beta'],
    ]);
  });

  it('reports an invalid file and still loads the others', async () => {
    write('good.yaml', workflow('good'));
    write('bad.yaml', 'name: bad\nsteps:\n  - run: a\n    timeout: soon\n');
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.definition.name)).toEqual(['good']);
    expect(loaded.problems.map(formatProblem)).toEqual([
      'bad.yaml:4: steps[0].timeout: expected a duration like 30s, 5m or a number of seconds, got `soon`',
    ]);
  });

  it('refuses both files that define the same workflow name, each naming the other', async () => {
    write('one.yaml', workflow('deploy'));
    write('two.yml', `# the same name again\n${workflow('deploy')}`);
    write('other.yaml', workflow('other'));
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['other.yaml']);
    expect(loaded.problems.map(formatProblem)).toEqual([
      'one.yaml:1: name: the workflow `deploy` is also defined in two.yml; both files are skipped until the names differ',
      'two.yml:2: name: the workflow `deploy` is also defined in one.yaml; both files are skipped until the names differ',
    ]);
  });

  it('refuses a file larger than 1 MiB without parsing it', async () => {
    write('huge.yaml', `${workflow('huge')}#${'x'.repeat(MAX_WORKFLOW_FILE_BYTES)}\n`);
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows).toEqual([]);
    expect(loaded.problems).toEqual([
      {
        file: 'huge.yaml',
        message: expect.stringMatching(/^the file is too large \(\d+ bytes; a workflow file is at most 1 MiB\)$/),
      },
    ]);
  });

  it('says a file is not UTF-8, naming the line, and still loads a UTF-8 one with a byte-order mark', async () => {
    fs.writeFileSync(
      path.join(dir, 'latin.yaml'),
      Buffer.concat([
        Buffer.from('name: cafe\ndescription: caf'),
        Buffer.from([0xe9]),
        Buffer.from('\nsteps: [{run: a}]\n'),
      ]),
    );
    fs.writeFileSync(path.join(dir, 'bom.yaml'), `\ufeff${workflow('bom')}`);
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.definition.name)).toEqual(['bom']);
    expect(loaded.problems).toEqual([
      { file: 'latin.yaml', line: 2, message: 'the file is not UTF-8 text (save it as UTF-8; Latin-1 is not read)' },
    ]);
  });

  it('lists a file whose name is not UTF-8, its other bytes shown as \\xHH, and ignores such a name that is no workflow file', async () => {
    const name = (...parts: (string | number[])[]) =>
      Buffer.concat([Buffer.from(dir + path.sep), ...parts.map((p) => Buffer.from(p))]);
    fs.writeFileSync(name('caf', [0xe9], '-\u00fc', [0xff, 0xfe], '.yaml'), workflow('cafe'));
    fs.writeFileSync(name('notes', [0xe9], '.txt'), 'not a workflow');
    write('ok.yaml', workflow('ok'));
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['ok.yaml']);
    expect(loaded.problems).toEqual([
      {
        file: 'caf\\xe9-\u00fc\\xff\\xfe.yaml',
        message:
          "the file's name is not UTF-8 text (its other bytes are shown as \\xHH; Latin-1, perhaps): " +
          'skipped until it is renamed (`mv`) to a UTF-8 name',
      },
    ]);
  });

  it('reports a file it cannot read, and a link to nothing', async () => {
    fs.symlinkSync('loop.yaml', path.join(dir, 'loop.yaml')); // ELOOP: unreadable even for root
    fs.symlinkSync('missing-target.yaml', path.join(dir, 'dangling.yaml'));
    write('ok.yaml', workflow('ok'));
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['ok.yaml']);
    expect(loaded.problems).toEqual([
      { file: 'dangling.yaml', message: 'the file is a link to nothing' },
      { file: 'loop.yaml', message: 'cannot read the file: ELOOP' },
    ]);
  });

  it.skipIf(process.getuid?.() === 0)('reports a file without read permission', async () => {
    write('secret.yaml', workflow('secret'));
    fs.chmodSync(path.join(dir, 'secret.yaml'), 0o000);
    const loaded = await loadWorkflows(dir);
    expect(loaded.problems).toEqual([{ file: 'secret.yaml', message: 'cannot read the file: permission denied' }]);
  });

  it('skips a file any user may change, and reads nothing of a directory any user may write to', async () => {
    write('open.yaml', workflow('open'));
    write('group.yaml', workflow('group'));
    write('kept.yaml', workflow('kept'));
    fs.chmodSync(path.join(dir, 'open.yaml'), 0o666);
    fs.chmodSync(path.join(dir, 'group.yaml'), 0o664); // a user-private group's umask: kept
    let loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['group.yaml', 'kept.yaml']);
    expect(loaded.problems).toEqual([
      {
        file: 'open.yaml',
        message:
          'any user of this machine may change the file (mode 0666), and the agent runs what it says: skipped until `chmod o-w`',
      },
    ]);

    fs.chmodSync(dir, 0o777);
    loaded = await loadWorkflows(dir);
    expect(loaded.workflows).toEqual([]);
    expect(loaded.problems).toEqual([
      {
        file: dir,
        message: `the workflows directory ${dir}: any user of this machine may add or replace files in it (mode 0777), and the agent runs what they say: none is read until \`chmod o-w ${dir}\``,
      },
    ]);
    // With the sticky bit (as /tmp), only a file's owner may replace it.
    fs.chmodSync(dir, 0o1777);
    expect((await loadWorkflows(dir)).workflows.map((w) => w.file)).toEqual(['group.yaml', 'kept.yaml']);
  });

  it.runIf(process.getuid?.() === 0)(
    "skips a file (or a link) of another user than root or the agent's, which cannot disable a trusted one",
    async () => {
      // A directory any user may write to with the sticky bit (as /tmp): user nobody adds files.
      fs.chmodSync(dir, 0o1777);
      write('cleanup.yaml', workflow('cleanup'));
      write('evil.yaml', workflow('evil'));
      write('same-name.yaml', workflow('cleanup'));
      fs.symlinkSync(path.join(dir, 'cleanup.yaml'), path.join(dir, 'link.yaml'));
      for (const name of ['evil.yaml', 'same-name.yaml']) fs.chownSync(path.join(dir, name), 65534, 65534);
      fs.lchownSync(path.join(dir, 'link.yaml'), 65534, 65534);
      const loaded = await loadWorkflows(dir);
      expect(loaded.workflows.map((w) => w.file)).toEqual(['cleanup.yaml']);
      const nobody = fs.readFileSync('/etc/passwd', 'utf8').includes('nobody:x:65534:')
        ? 'nobody (uid 65534)'
        : 'uid 65534';
      const skipped = (what: string) =>
        `${what} belongs to ${nobody}, not to root, and the agent runs what it says: skipped until it belongs to root (\`chown root\`)`;
      expect(loaded.problems).toEqual([
        { file: 'evil.yaml', message: skipped('the file') },
        { file: 'link.yaml', message: skipped('the link to the file') },
        { file: 'same-name.yaml', message: skipped('the file') },
      ]);

      // An agent running as another user trusts its own files and root's, not a third user's.
      fs.chownSync(path.join(dir, 'evil.yaml'), 4242, 4242);
      const asUser = await loadWorkflows(dir, { agentUid: 4242 });
      expect(asUser.workflows.map((w) => w.file)).toEqual(['cleanup.yaml', 'evil.yaml']);
      expect(asUser.problems.map((p) => p.file)).toEqual(['link.yaml', 'same-name.yaml']);
      expect(asUser.problems[1]!.message).toBe(
        `the file belongs to ${nobody}, not to root or to uid 4242, the agent's user, and the agent runs what it says: skipped until it belongs to one of them (\`chown 4242\`)`,
      );
    },
  );

  it('says that a missing directory is missing, without a problem, and that a file is not a directory', async () => {
    expect(await loadWorkflows(path.join(dir, 'nope'))).toEqual({
      workflows: [],
      problems: [],
      missingDirectory: true,
    });
    write('plain', 'x');
    const notDir = await loadWorkflows(path.join(dir, 'plain'));
    expect(notDir.workflows).toEqual([]);
    expect(notDir.problems).toEqual([
      {
        file: path.join(dir, 'plain'),
        message: `the workflows directory ${path.join(dir, 'plain')}: it is not a directory`,
      },
    ]);
  });
});

describe('param patterns in workflow files', () => {
  const withPatterns = (name: string, patterns: string[]) =>
    `name: ${name}\nparams:\n${patterns.map((p, i) => `  - {name: p${i}, type: string, pattern: '${p}'}\n`).join('')}` +
    'steps: [{run: a}]\n';

  it('loads the pattern engine only for a file with a pattern, and names what RE2 lacks at its line', async () => {
    // Modules of their own: an earlier test file in this worker may have loaded the engine.
    vi.resetModules();
    const { patternEngineLoaded } = await import('@drover/shared');
    const { loadWorkflows } = await import('../../src/workflows/load-workflows.js');
    write('plain.yaml', workflow('plain'));
    await loadWorkflows(dir);
    expect(patternEngineLoaded()).toBe(false);
    write('ref.yaml', withPatterns('ref', ['^v[0-9]+$', '^(?!main$)']));
    const loaded = await loadWorkflows(dir);
    expect(patternEngineLoaded()).toBe(true);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['plain.yaml']);
    expect(loaded.problems.map(formatProblem)).toEqual([
      'ref.yaml:4: params[1].pattern: uses a lookahead `(?=...)`/`(?!...)`, which patterns do not support ' +
        '(they are RE2 syntax, matched in linear time); got `^(?!main$)` (string)',
    ]);
  });

  it(`keeps the coordinator's limits across files: at most ${MAX_SET_PATTERNS} distinct patterns`, async () => {
    for (const file of ['a', 'b', 'c']) {
      write(
        `${file}.yaml`,
        withPatterns(
          file,
          Array.from({ length: 100 }, (_, i) => `^${file}${i}$`),
        ),
      );
    }
    const loaded = await loadWorkflows(dir);
    expect(loaded.workflows.map((w) => w.file)).toEqual(['a.yaml', 'b.yaml']);
    expect(loaded.problems).toHaveLength(100 - (MAX_SET_PATTERNS - 200));
    expect(formatProblem(loaded.problems[0]!)).toBe(
      `c.yaml:${3 + MAX_SET_PATTERNS - 200}: params[${MAX_SET_PATTERNS - 200}].pattern: is one pattern too many: ` +
        `the workflows of one agent carry at most ${MAX_SET_PATTERNS} distinct patterns; got \`^c56$\` (string)`,
    );
  });
});
