import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { writeWorkflowFile } from './agent-daemon.js';
import type { TestCoordinator } from './coordinator.js';
import { getBinding, type BindingBody } from './ota.js';
import { eventually } from './poll.js';

/**
 * Helpers of the OTA end-to-end tests with real agent processes (test/e2e/ota-agent-*.test.ts).
 */

/**
 * Writes the update workflow `name` into the agent's workflows: it copies the artifact to
 * `<marks>/artifact` and writes the version it was given to `<marks>/version`, so a test sees
 * exactly what was installed.
 */
export function writeUpdateWorkflow(stateDir: string, marks: string, name = 'apply-update'): void {
  fs.mkdirSync(marks, { recursive: true });
  writeWorkflowFile(
    stateDir,
    name,
    [
      `name: ${name}`,
      'steps:',
      `  - run: cp "$DROVER_PARAM_ARTIFACT" "${marks}/artifact" && printf %s "$DROVER_PARAM_VERSION" > "${marks}/version"`,
      '    shell: true',
      '',
    ].join('\n'),
  );
}

/** What the update workflow installed last (null: nothing). */
export function installedVersion(marks: string): string | null {
  try {
    return fs.readFileSync(path.join(marks, 'version'), 'utf8');
  } catch {
    return null;
  }
}

/** The binding, polled until `check` holds for it. */
export async function bindingWhen(
  t: TestCoordinator,
  appId: string,
  deviceId: string,
  check: (b: BindingBody) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<BindingBody> {
  let last: BindingBody | null = null;
  return eventually(
    async () => {
      last = await getBinding(t.owner, t.orgId, appId, deviceId);
      return check(last) && last;
    },
    timeoutMs,
    () => `${what}; binding: ${JSON.stringify(last)}`,
  );
}

/**
 * An HTTP proxy in front of the coordinator that passes everything through (the event stream
 * included) and, while `tamper` is set, rewrites the answers of `GET /v1/agent/deploy/desired`.
 */
export interface TamperingProxy {
  url: string;
  tamper: ((body: { apps: { payload: Record<string, any>; signature: string }[] }) => void) | null;
  /** How many manifest answers were rewritten. */
  tampered: number;
  close(): Promise<void>;
}

export async function startTamperingProxy(targetUrl: string): Promise<TamperingProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<import('node:net').Socket>();
  const proxy: TamperingProxy = { url: '', tamper: null, tampered: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const tamper = proxy.tamper;
        if (!tamper || !req.url?.startsWith('/v1/agent/deploy/desired') || answer.statusCode !== 200) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.flushHeaders();
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          tamper(body);
          proxy.tampered += 1;
          const text = JSON.stringify(body);
          const headers = { ...answer.headers, 'content-length': String(Buffer.byteLength(text)) };
          res.writeHead(200, headers).end(text);
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return proxy;
}

/** The update jobs of an agent, oldest first, straight from the database (they are in no list). */
export async function updateJobsOf(
  t: TestCoordinator,
  agentId: string,
): Promise<{ id: string; status: string; params: any; errorMessage: string | null }[]> {
  const rows = await t.sql.all<{ id: string; status: string; params: string; error_message: string | null }>(
    "SELECT id, status, params, error_message FROM jobs WHERE agent_id = ? AND kind = 'update' ORDER BY seq",
    agentId,
  );
  return rows.map((r) => ({ id: r.id, status: r.status, params: JSON.parse(r.params), errorMessage: r.error_message }));
}
