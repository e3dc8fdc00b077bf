import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { testRuntime } from './test-runtime.js';

/** A coordinator whose TLS certificate this machine does not trust: said so, with what to do, not a bare code. */

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let dir: string;
let server: https.Server;
let port: number;
beforeAll(async () => {
  if (!hasOpenssl) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-tls-'));
  // Self-signed, for the name `localhost` only.
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem'].concat([
      '-out',
      'cert.pem',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
    ]),
    { cwd: dir, stdio: 'pipe' },
  );
  server = https.createServer(
    { key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) },
    (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  if (!hasOpenssl) return;
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasOpenssl)('a coordinator behind a TLS certificate this machine refuses', () => {
  const token = async (url: string) => {
    const rt = testRuntime({ env: { DROVER_URL: url, DROVER_TOKEN: 'drv_x', XDG_CONFIG_HOME: dir } });
    return { code: await runCli(['token'], rt), stdout: rt.stdout(), stderr: rt.stderr() };
  };

  it('says that the CA is not trusted and how to trust a private one', async () => {
    expect(await token(`https://localhost:${port}`)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `drover: cannot reach the coordinator at https://localhost:${port}: its TLS certificate is not signed by a ` +
        'CA this machine trusts (DEPTH_ZERO_SELF_SIGNED_CERT); for a private CA, set NODE_EXTRA_CA_CERTS to the ' +
        'CA certificate file (PEM)\n',
    });
  });

  it('says which name the certificate lacks, once its CA is trusted (NODE_EXTRA_CA_CERTS)', async () => {
    // NODE_EXTRA_CA_CERTS is read as a process starts: a process of its own.
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    // Spawned, not spawnSync: the server answering the handshake is in this process.
    const child = spawn(process.execPath, ['--conditions=drover-source', '--import', 'tsx', main, 'token'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem'),
        DROVER_URL: `https://127.0.0.1:${port}`,
        DROVER_TOKEN: 'drv_x',
        XDG_CONFIG_HOME: dir,
      },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status).toBe(2);
    expect(stderr).toBe(
      `drover: cannot reach the coordinator at https://127.0.0.1:${port}: its TLS certificate does not name ` +
        '127.0.0.1 (ERR_TLS_CERT_ALTNAME_INVALID): use --url with a name the certificate has\n',
    );
  }, 30_000);
});
