import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

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

describe('usage errors', () => {
  it('exit 2 with one `drover:` line and a pointer to --help', async () => {
    const rt = testRuntime();
    expect(await runCli(['run'], rt)).toBe(2);
    expect(rt.stderr()).toBe("drover: missing required argument 'trigger-id'\n(run with --help for usage)\n");
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

  it('refuses options that need another one', async () => {
    const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['run', 'x', '--logs'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: --logs needs --wait\n');
  });

  it('names the coordinator it cannot reach', async () => {
    const rt = testRuntime({ env: { DROVER_URL: 'http://127.0.0.1:1', DROVER_TOKEN: 'drv_x' } });
    expect(await runCli(['token'], rt)).toBe(2);
    expect(rt.stderr()).toBe('drover: cannot reach the coordinator at http://127.0.0.1:1: ECONNREFUSED\n');
  });
});
