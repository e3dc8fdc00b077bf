import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkListen, listenProblem } from '../../src/cli/listen-check.js';

/** What a failed listen (or another failure of `start`) is said as, in `drover-coordinator start`. */

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** An error as Node raises it: `code`, `syscall` and the rest. */
const fsError = (code: string, syscall: string, file: string) =>
  Object.assign(new Error(`${code}: permission denied, ${syscall} '${file}'`), { code, syscall, path: file });

describe('listenProblem', () => {
  it("names the port for a listen's own errors", async () => {
    const taken = net.createServer();
    servers.push(taken);
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    expect(await checkListen('127.0.0.1', port)).toEqual({
      code: 'in_use',
      message: `port ${port} on 127.0.0.1 is in use by another program`,
    });
    const refused = Object.assign(new Error('listen EACCES: permission denied 0.0.0.0:80'), {
      code: 'EACCES',
      syscall: 'listen',
    });
    expect(listenProblem(refused, '0.0.0.0', 80)).toEqual({
      code: 'forbidden',
      message: 'cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need privileges)',
    });
  });

  it('leaves alone an error no listen raised: a data directory file it may not open is no port', () => {
    expect(listenProblem(fsError('EACCES', 'open', '/var/lib/drover/drover.sqlite'), '127.0.0.1', 8080)).toBeNull();
    expect(listenProblem(fsError('EPERM', 'rename', '/var/lib/drover/server.key'), '127.0.0.1', 8080)).toBeNull();
    expect(listenProblem(new Error('database or disk is full'), '127.0.0.1', 8080)).toBeNull();
    expect(listenProblem(null, '127.0.0.1', 8080)).toBeNull();
  });
});
