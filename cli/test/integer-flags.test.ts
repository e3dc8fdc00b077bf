import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

/**
 * A whole number given to a flag is its decimal digits alone: what `Number()` also reads (`0x10`,
 * `1e2`, `1.0`, ` 5`) is refused before any call, never sent as another number than the one meant
 * (`--hours 0x10` counted 16 hours, `--limit-per-minute 1e3` made a limit of 1000).
 */

let calls = 0;
const coordinator = http.createServer((_req, res) => {
  calls += 1;
  res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"no call was expected"}');
});
let url: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => coordinator.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(coordinator.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => coordinator.close(() => resolve())));

const FLAGS: [string[], string, string][] = [
  [['jobs'], '--limit', 'an integer from 1 to 200'],
  [['batch', 'list'], '--limit', 'an integer from 1 to 200'],
  [['audit'], '--limit', 'an integer from 1 to 200'],
  [['overview'], '--hours', 'an integer from 1 to 168'],
  [['enrollment-token', 'list'], '--limit', 'an integer from 1 to 500'],
  [['agents'], '--limit', 'an integer from 1 to 500'],
  [['app', 'devices', 'firmware'], '--limit', 'an integer from 1 to 500'],
  [['api-token', 'create', '--name', 'ci'], '--limit-per-minute', 'a whole number from 1'],
  [
    ['trigger', 'create', '--name', 'x', '--selector', 'role=a', '--workflow', 'w'],
    '--max-parallel',
    'a whole number from 1',
  ],
];

describe('whole numbers on the command line', () => {
  it.each(FLAGS)(
    '`drover %s` refuses a %s that is no plain whole number, before any call',
    async (args, flag, range) => {
      for (const value of ['0x10', '1e2', '1.0', ' 5', '0b1', '', '-1', '0', '10000000000000000000']) {
        const rt = testRuntime({ env: { DROVER_URL: url } });
        expect(await runCli([...args, flag, value], rt), `${flag} ${value}`).toBe(2);
        expect(rt.stdout()).toBe('');
        expect(rt.stderr()).toBe(`drover: ${flag}: expected ${range}, got \`${value}\`\n`);
      }
      expect(calls).toBe(0);
    },
  );
});
