import { describe, expect, it } from 'vitest';
import { completions } from '../src/completion/complete.js';
import { buildProgram } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

const program = buildProgram(testRuntime());
const complete = (line: string) => completions(program, line.split(' '));

describe('completion candidates', () => {
  it('are the commands at the start, without the hidden one', () => {
    const top = complete('');
    expect(top).toContain('run');
    expect(top).toContain('api-token');
    expect(top.some((c) => c.startsWith('__'))).toBe(false);
  });

  it("are a group's subcommands after it, global options skipped with their values", () => {
    expect(complete('--url http://x --org acme release ')).toEqual([
      'create',
      'publish',
      'yank',
      'list',
      'keygen',
      'sign',
      'rotate-keys',
    ]);
    expect(complete('--url=http://x trigger ')).toEqual([
      'create',
      'list',
      'show',
      'update',
      'pause',
      'resume',
      'delete',
    ]);
    expect(complete('enrollment-token ')).toEqual(['create', 'list', 'revoke']);
    // After `help`, the commands it shows the help of.
    expect(complete('help trigger ')).toEqual(['create', 'list', 'show', 'update', 'pause', 'resume', 'delete']);
  });

  it("are the command's and the global options after a dash", () => {
    const options = complete('files upload x -');
    expect(options).toEqual(
      expect.arrayContaining(['--ttl', '--persistent', '--binding', '--json', '--url', '--help']),
    );
    expect(options).not.toContain('--wait');
    expect(complete('enrollment-token list -')).toEqual(
      expect.arrayContaining(['--state', '--limit', '--cursor', '--all', '--json']),
    );
  });

  it('are none where a value goes (the shell completes file names)', () => {
    expect(complete('run x --params-file ')).toEqual([]);
    expect(complete('files download x -o ')).toEqual([]);
  });
});
