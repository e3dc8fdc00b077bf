/**
 * The main job of a fresh clone (run by scripts/quickstart.sh after setup): a coordinator on its
 * embedded defaults, a local agent enrolled with it, the sample workflow `hello`, two triggers
 * for it (async and sync) and an API token that may run them; then it prints ready-to-paste
 * `curl` lines and keeps both processes running until Ctrl-C.
 *
 * Everything lives under the data directory (DROVER_DATA_DIR, default ./data): the coordinator's
 * files, the agent's state directory (`agent/`) and `quickstart.json` (mode 0600: the owner's
 * credentials, the trigger ids and the API token), so a second run reuses them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { shebangNodeFlags } from './lib/node-flags.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.resolve(process.env.DROVER_DATA_DIR ?? 'data');
const agentDir = path.join(dataDir, 'agent');
const stateFile = path.join(dataDir, 'quickstart.json');
const port = process.env.DROVER_PORT ?? '8080';
const host = process.env.DROVER_HOST ?? '127.0.0.1';
const origin = (process.env.DROVER_PUBLIC_URL ?? `http://${host}:${port}`).replace(/\/+$/, '');
const base = `${origin}/v1`;

interface QuickstartState {
  email: string;
  password: string;
  asyncTriggerId?: string;
  syncTriggerId?: string;
  apiToken?: string;
}

const children: ChildProcess[] = [];

function say(line = ''): void {
  process.stdout.write(`${line}\n`);
}

function fail(message: string): never {
  process.stderr.write(`quickstart: ${message}\n`);
  process.exit(1); // the exit handler stops the children
}

/** `fetch` whose answer body is always read: an unread body holds the connection open, and a
 * coordinator cannot finish a graceful shutdown while a response to it is still being written. */
async function request(url: string, init: RequestInit = {}): Promise<{ ok: boolean; status: number; text: string }> {
  const res = await fetch(url, init);
  return { ok: res.ok, status: res.status, text: await res.text() };
}

function loadState(): QuickstartState | null {
  try {
    return JSON.parse(fs.readFileSync(stateFile, 'utf8')) as QuickstartState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    fail(`${stateFile} is unreadable (${(error as Error).message}); delete ${dataDir} to start over`);
  }
}

function saveState(state: QuickstartState): void {
  const tmp = `${stateFile}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, stateFile);
}

async function api<T>(method: string, route: string, token: string | null, body?: unknown): Promise<T> {
  const res = await request(`${base}${route}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { text } = res;
  if (!res.ok) fail(`${method} ${route} answered ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * Starts a child in its own process group: Ctrl-C in a terminal signals the whole foreground group,
 * and a child that got SIGINT from the terminal and SIGTERM from us would take the second signal
 * as "stop at once". Only this process gets the terminal's signal; it stops the children.
 */
function start(name: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  children.push(child);
  child.on('exit', (code, signal) => {
    if (!stopping) fail(`the ${name} exited (${signal ?? `code ${code}`}); see ${logFile}`);
    else if (code !== 0)
      process.stderr.write(`quickstart: the ${name} stopped with ${signal ?? `code ${code}`}; see ${logFile}\n`);
  });
  return child;
}

// Whatever ends this process, the children must not outlive it: each gets a SIGTERM (a second
// one after the graceful stop began, when the user pressed Ctrl-C twice, which stops it at once).
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > until) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1); // the second Ctrl-C: the exit handler signals the children again
    stopping = true;
    say('\nStopping the agent and the coordinator...');
    for (const child of children) child.kill('SIGTERM');
    const exited = children.map(
      (c) =>
        new Promise<number | null>((r) =>
          c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code)),
        ),
    );
    void Promise.all(exited).then((codes) => process.exit(codes.every((code) => code === 0) ? 0 : 1));
  });
}

fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
const firstRun = !fs.existsSync(path.join(dataDir, 'drover.sqlite'));
let state = loadState();
if (firstRun) {
  state = {
    email: process.env.DROVER_BOOTSTRAP_EMAIL ?? 'admin@localhost',
    password: process.env.DROVER_BOOTSTRAP_PASSWORD ?? randomBytes(15).toString('base64url'),
  };
  saveState(state);
} else if (!state) {
  fail(`${dataDir} holds a coordinator but no quickstart.json; delete ${dataDir} to start over`);
}
const creds = state!;

const coordinatorEnv: NodeJS.ProcessEnv = {
  ...process.env,
  DROVER_DATA_DIR: dataDir,
  DROVER_PORT: port,
  DROVER_HOST: host,
  ...(firstRun ? { DROVER_BOOTSTRAP_EMAIL: creds.email, DROVER_BOOTSTRAP_PASSWORD: creds.password } : {}),
};
const coordinatorMain = 'coordinator/dist/cli/main.js';
start(
  'coordinator',
  [...shebangNodeFlags(path.join(root, coordinatorMain)), coordinatorMain, 'start'],
  coordinatorEnv,
  path.join(dataDir, 'coordinator.log'),
);
await waitFor('the coordinator', async () => ((await request(`${base}/openapi.json`)).ok ? true : undefined));

const { token: session } = await api<{ token: string }>('POST', '/auth/login', null, {
  email: creds.email,
  password: creds.password,
});
const orgs = await api<{ id: string; role: string }[]>('GET', '/orgs', session);
const orgId = orgs.find((o) => o.role === 'owner')?.id ?? fail('the quickstart owner owns no organization');

const agentCli = ['agent/dist/cli/main.js'];
const agentEnv: NodeJS.ProcessEnv = { ...process.env, DROVER_AGENT_STATE_DIR: agentDir };
if (!fs.existsSync(path.join(agentDir, 'agent.json'))) {
  const { token } = await api<{ token: string }>('POST', `/orgs/${orgId}/enrollment-tokens`, session, {
    name: 'quickstart',
  });
  const enroll = spawn(
    process.execPath,
    [...agentCli, 'enroll', '--url', origin, '--token', token, '--name', 'local', '--state-dir', agentDir],
    { cwd: root, env: agentEnv, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const code = await new Promise<number | null>((r) => enroll.once('exit', r));
  if (code !== 0) fail('enrolling the local agent failed');
}
const workflowsDir = path.join(agentDir, 'workflows');
fs.mkdirSync(workflowsDir, { recursive: true, mode: 0o700 });
if (!fs.existsSync(path.join(workflowsDir, 'hello.yaml'))) {
  fs.copyFileSync(path.join(root, 'agent/examples/workflows/hello.yaml'), path.join(workflowsDir, 'hello.yaml'));
}
const { agentId } = JSON.parse(fs.readFileSync(path.join(agentDir, 'agent.json'), 'utf8')) as { agentId: string };
start('agent', [...agentCli, 'run', '--state-dir', agentDir], agentEnv, path.join(dataDir, 'agent.out'));

await waitFor('the agent to report the hello workflow', async () => {
  const workflows = await api<{ name: string; agentId: string }[]>('GET', `/orgs/${orgId}/workflows`, session);
  return workflows.some((w) => w.name === 'hello' && w.agentId === agentId) ? true : undefined;
});

async function ensureTrigger(id: string | undefined, name: string, responseMode: 'async' | 'sync'): Promise<string> {
  if (id) {
    const res = await request(`${base}/orgs/${orgId}/triggers/${id}`, {
      headers: { authorization: `Bearer ${session}` },
    });
    if (res.ok) return id;
  }
  const created = await api<{ id: string }>('POST', `/orgs/${orgId}/triggers`, session, {
    name,
    agentId,
    scopeType: 'workflow',
    workflowName: 'hello',
    responseMode,
  });
  return created.id;
}
creds.asyncTriggerId = await ensureTrigger(creds.asyncTriggerId, 'hello (async)', 'async');
creds.syncTriggerId = await ensureTrigger(creds.syncTriggerId, 'hello (sync)', 'sync');
const tokenWorks =
  creds.apiToken !== undefined &&
  (await request(`${base}/token`, { headers: { authorization: `Bearer ${creds.apiToken}` } })).ok;
if (!tokenWorks) {
  const issued = await api<{ token: string }>('POST', `/orgs/${orgId}/api-tokens`, session, {
    name: 'quickstart',
    scopes: [{ type: 'trigger', triggerIds: [creds.asyncTriggerId, creds.syncTriggerId] }],
    rateLimitPerMinute: 60,
    rateLimitPerHour: 1000,
    rateLimitPerDay: 10000,
  });
  creds.apiToken = issued.token;
}
saveState(creds);

say();
say(`Drover is running: coordinator ${origin} (log: ${path.join(dataDir, 'coordinator.log')}),`);
say(`local agent ${agentId} (log: ${path.join(agentDir, 'logs', 'agent.log')}) with the workflow "hello";`);
say(`read its log with: node ${agentCli[0]} logs --state-dir ${agentDir}`);
say(`Dashboard owner: ${creds.email} / ${creds.password} (also in ${stateFile}, mode 0600).`);
say();
say('Run the workflow and get the job id at once (async):');
say(`  curl -s -X POST ${base}/triggers/${creds.asyncTriggerId}/run \\`);
say(`    -H 'authorization: Bearer ${creds.apiToken}' -H 'content-type: application/json' \\`);
say(`    -d '{"params":{"who":"Drover"}}'`);
say();
say('Run it and wait for the result (sync):');
say(`  curl -s -X POST ${base}/triggers/${creds.syncTriggerId}/run \\`);
say(`    -H 'authorization: Bearer ${creds.apiToken}' -H 'content-type: application/json' \\`);
say(`    -d '{"params":{"who":"Drover"}}'`);
say();
say('Press Ctrl-C to stop both.');
