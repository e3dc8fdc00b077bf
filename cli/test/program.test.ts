import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';
import { CLI_VERSION } from '../src/version.js';

/** Every command's path from the root (`['files', 'upload']`), hidden ones left out. */
function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands
    .filter((c) => !c.name().startsWith('__') && c.name() !== 'help')
    .flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

const paths = commandPaths(buildProgram(testRuntime()));

describe('drover --help', () => {
  it('lists every command', async () => {
    const rt = testRuntime();
    expect(await runCli(['--help'], rt)).toBe(0);
    for (const [name] of paths) expect(rt.stdout()).toContain(`\n  ${name}`);
  });

  it.each(paths.map((p) => [p.join(' '), p]))('works on `drover %s`', async (_name, path) => {
    const rt = testRuntime();
    expect(await runCli([...(path as string[]), '--help'], rt)).toBe(0);
    expect(rt.stdout()).toMatch(new RegExp(`^Usage: drover ${(path as string[]).join(' ')} `));
    expect(rt.stderr()).toBe('');
  });
});

describe('drover --version', () => {
  it('names the Node.js runtime it runs on, as drover-agent and drover-coordinator do (docs/cli.md)', async () => {
    const rt = testRuntime();
    expect(await runCli(['--version'], rt)).toBe(0);
    expect(rt.stdout()).toBe(
      `${CLI_VERSION} (Node.js ${process.versions.node}, ${process.platform}-${process.arch})\n`,
    );
  });
});

describe('drover trigger --help', () => {
  it('says both fanouts, who may delete, and each default once', async () => {
    const create = testRuntime();
    expect(await runCli(['trigger', 'create', '--help'], create)).toBe(0);
    const help = create.stdout().replace(/\s+/g, ' ');
    expect(help).toContain('--fanout <fanout> with --selector: all (the default), each run a batch of one job per');
    expect(help).toContain('or one, a pool: each run one job, on one agent selected with room');
    expect(help).toContain('a ref runs must give (repeatable; default: any) --allow-debug');
    const remove = testRuntime();
    expect(await runCli(['trigger', 'delete', '--help'], remove)).toBe(0);
    expect(remove.stdout()).toContain('delete a trigger (owners and operators)');
  });
});

describe('usage errors', () => {
  it('exit 2 with one `drover:` line and a pointer to --help', async () => {
    const rt = testRuntime();
    expect(await runCli(['run'], rt)).toBe(2);
    expect(rt.stderr()).toBe("drover: missing required argument 'trigger-id'\n(run with --help for usage)\n");
  });

  it('that drover finds in a value are the one line naming the flag, without the pointer (docs/cli.md)', async () => {
    const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['run', 'abc', '--param', 'bad'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: --param: expected name=value or name:=json, got `bad`\n');
  });

  it('refuse a param or a selector given twice, before any call (the last was taken in silence)', async () => {
    const env = { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' };
    const run = testRuntime({ env });
    expect(await runCli(['run', 'abc', '--param', 'a=1', '--param', 'b=2', '--param', 'a=3'], run)).toBe(2);
    expect(run.stderr()).toBe('drover: --param: the param a is given twice (`a=1` and `a=3`): give each param once\n');
    const twice =
      "drover: --selector is given twice (`role=gateway` and `site=berlin`): give one, its requirements joined with commas (e.g. 'role=gateway,site=berlin')\n";
    for (const args of [
      ['agents'],
      ['trigger', 'create', '--name', 't', '--workflow', 'w'],
      ['app', 'device-group', 'kiosk'],
    ]) {
      const rt = testRuntime({ env });
      expect(await runCli([...args, '--selector', 'role=gateway', '--selector', 'site=berlin'], rt)).toBe(2);
      expect(rt.stderr()).toBe(twice);
    }
  });

  it('exit 2 for an unknown command, and for a group without its subcommand', async () => {
    expect(await runCli(['deploy'], testRuntime())).toBe(2);
    const rt = testRuntime();
    expect(await runCli(['files'], rt)).toBe(2);
    expect(rt.stderr()).toContain('Usage: drover files');
  });

  it('exit 2 before any call when a setting is missing or malformed', async () => {
    const noToken = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1' } });
    expect(await runCli(['token'], noToken)).toBe(2);
    expect(noToken.stderr()).toBe('drover: this command needs an API token: pass --token or set DROVER_TOKEN\n');

    const badUrl = testRuntime({ env: { DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['token', '--url', 'ftp://drover'], badUrl)).toBe(2);
    expect(badUrl.stderr()).toBe(
      'drover: --url: The coordinator URL must start with http:// or https://, got `ftp://drover`\n',
    );

    const nothing = testRuntime();
    expect(await runCli(['agents'], nothing)).toBe(2);
    expect(nothing.stderr()).toMatch(/^drover: no credentials: pass an API token/);
  });

  it('refuse an empty --url, --token or --org rather than drop its variable (and call with the session instead)', async () => {
    const env = { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x', DROVER_ORG: 'default' };
    for (const [flag, expected] of [
      ['--url', "the coordinator's URL"],
      ['--token', 'an API token (drv_...)'],
      ['--org', "an organization's id or name"],
    ] as const) {
      for (const value of ['', ' ']) {
        const rt = testRuntime({ env });
        expect(await runCli(['workflows', flag, value], rt)).toBe(2);
        expect(rt.stderr()).toBe(`drover: ${flag}: expected ${expected}, got nothing\n`);
      }
    }
  });

  it('refuses a token with a line break, a space or a control character before any call', async () => {
    for (const [args, env, stderr] of [
      [
        ['--token', 'drv_a\nb'],
        {},
        '--token: an API token (drv_...) is one word of printable ASCII; this one holds a space or a line break',
      ],
      [
        [],
        { DROVER_TOKEN: 'drv_a b' },
        'DROVER_TOKEN: an API token (drv_...) is one word of printable ASCII; this one holds a space or a line break',
      ],
      [
        [],
        { DROVER_TOKEN: 'drv_\u0000é' },
        'DROVER_TOKEN: an API token (drv_...) is one word of printable ASCII; this one holds a character that is not printable ASCII',
      ],
    ] as const) {
      const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', ...env } });
      expect(await runCli(['workflows', ...args], rt)).toBe(2);
      expect(rt.stderr()).toBe(`drover: ${stderr}\n`);
    }
  });

  it('refuses options that need another one', async () => {
    const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['run', 'x', '--logs'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: --logs needs --wait\n');
  });

  it('refuses a duration the coordinator would refuse, naming the option, before any call', async () => {
    const refused = async (args: string[]) => {
      const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
      return { code: await runCli(args, rt), stderr: rt.stderr() };
    };
    expect(await refused(['files', 'upload', 'build.tar.gz', '--ttl', '30s'])).toEqual({
      code: 2,
      stderr: 'drover: --ttl: must be at least 1m (60 s), got `30s`\n',
    });
    expect(await refused(['enrollment-token', 'create', '--expires-in', '10s'])).toEqual({
      code: 2,
      stderr: 'drover: --expires-in: must be at least 1m (60 s), got `10s`\n',
    });
    expect(await refused(['enrollment-token', 'create', '--expires-in', '31d'])).toEqual({
      code: 2,
      stderr: 'drover: --expires-in: must be at most 30d, got `31d`\n',
    });
    for (const far of ['3000000d', '100000000d']) {
      expect(await refused(['api-token', 'create', '--name', 'x', '--expires-in', far])).toEqual({
        code: 2,
        stderr: `drover: --expires-in: must end by the year 9999, got \`${far}\`\n`,
      });
    }
    const timeout = ['trigger', 'create', '--name', 'x', '--agent', 'a', '--workflow', 'w', '--sync'];
    expect(await refused([...timeout, '--response-timeout', '15m'])).toEqual({
      code: 2,
      stderr: 'drover: --response-timeout: must be at most 10m (600 s), got `15m`\n',
    });
  });

  it('names the coordinator it cannot reach', async () => {
    const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['token'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: cannot reach the coordinator at http://127.0.0.1:1: ECONNREFUSED\n');
  });
});
