import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

/** Whether the `openssl` command line is here to make the test certificates. */
export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface TlsProxy {
  /** `https://127.0.0.1:<port>`, forwarding to the target. */
  url: string;
  /** The PEM file of the private CA that signed the proxy's certificate (for NODE_EXTRA_CA_CERTS). */
  caFile: string;
  close(): Promise<void>;
}

/**
 * An HTTPS front for an HTTP server, as a reverse proxy terminating TLS in production: TLS on a
 * loopback port with a certificate for `127.0.0.1` signed by a private CA made for the occasion
 * (openssl), each connection piped to `targetUrl`.
 */
export async function startTlsProxy(targetUrl: string): Promise<TlsProxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Drover test CA');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(file('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'san.ext',
    '-out',
    'server.pem',
  );

  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = tls.createServer(
    { key: fs.readFileSync(file('server.key')), cert: fs.readFileSync(file('server.pem')) },
    (client) => {
      track(client);
      const upstream = net.connect(Number(target.port), target.hostname);
      track(upstream);
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    },
  );
  server.on('tlsClientError', () => {}); // a client that refuses the certificate
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    caFile: file('ca.pem'),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
