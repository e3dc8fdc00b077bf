/**
 * A child process of bench/slow-body-flood.ts: opens `--count` connections to `--url`, spread
 * over `--addresses` loopback source addresses (127.0.0.2, 127.0.0.3, ...), each sending a POST
 * that announces 1000 bytes of body and sends 10, then waits until the server has closed every
 * one. Prints one JSON line: per connection its lifetime and the status the server answered.
 */
import net from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    count: { type: 'string', default: '20000' },
    addresses: { type: 'string', default: '1' },
    wave: { type: 'string', default: '500' },
  },
});
const { hostname, port } = new URL(values.url!);
const count = Number(values.count);
const addresses = Number(values.addresses);
const wave = Number(values.wave);
const paths = ['/v1/auth/login', '/v1/agent/enroll'];

interface Outcome {
  lifetimeMs: number;
  status: number | null;
  error: string | null;
}

function halfSent(path: string): string {
  return `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"email":`;
}

function open(index: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect({
      host: hostname,
      port: Number(port),
      localAddress: `127.0.0.${2 + (index % addresses)}`,
    });
    let head = '';
    let error: string | null = null;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (head.length < 16) head += chunk;
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.once('connect', () => socket.write(halfSent(paths[index % paths.length]!)));
    socket.once('close', () => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
      resolve({ lifetimeMs: performance.now() - started, status: match ? Number(match[1]) : null, error });
    });
  });
}

const outcomes: Promise<Outcome>[] = [];
const floodStarted = performance.now();
for (let i = 0; i < count; i += wave) {
  const batch = Array.from({ length: Math.min(wave, count - i) }, (_, j) => open(i + j));
  outcomes.push(...batch);
  // Let the wave's connections be accepted before the next: a listen backlog is not infinite.
  await new Promise((r) => setTimeout(r, 20));
}
const openedMs = performance.now() - floodStarted;
const results = await Promise.all(outcomes);
process.stdout.write(`${JSON.stringify({ openedMs, results })}\n`);
