/**
 * The main job of a fresh clone (run by scripts/quickstart.sh after setup): a coordinator on its
 * embedded defaults, a local agent enrolled with it, the sample workflow `hello`, two triggers
 * for it (async and sync) and an API token that may run them; then it prints ready-to-paste
 * `curl` lines and keeps both processes running until Ctrl-C.
 *
 * Everything lives under the data directory (DROVER_DATA_DIR, default ./data): the coordinator's
 * files, the agent's state directory (`agent/`) and `quickstart.json` (mode 0600: the owner's
 * credentials, the trigger ids and the API token), so a second run reuses them.
 *
 * One quick start at a time uses a data directory (`quickstart.lock`). Before it does anything,
 * it says in one line what stands in the way: another quick start, a coordinator or an agent
 * already running on this data, or a port in use. `--check` does only that (scripts/quickstart.sh
 * runs it before setting up, when a previous setup left the tools to run it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { LOCK_FILE as AGENT_LOCK_FILE } from '../agent/src/daemon/lock.js';
import { dataDirHolder } from '../coordinator/src/cli/data-dir-lock.js';
import { ConfigError, loadConfig, type Config } from '../coordinator/src/config/config.js';
import { checkListen } from '../coordinator/src/cli/listen-check.js';
import { acquirePidLock, isLockHeldError, lockHolderPid } from '../shared/src/pid-lock.js';
import { shebangNodeFlags } from './lib/node-flags.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The coordinator's settings, checked as the coordinator checks them, before anything is done.
const config = ((): Config => {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.problems.join('; '));
    throw error;
  }
})();
const dataDir = config.dataDir;
const agentDir = path.join(dataDir, 'agent');
const stateFile = path.join(dataDir, 'quickstart.json');
const lockFile = path.join(dataDir, 'quickstart.lock');
const coordinatorLog = path.join(dataDir, 'coordinator.log');
const agentOut = path.join(dataDir, 'agent.out');
/** The agent's own log: its lines go there, not to its output, which holds only what stops it at start. */
const agentLog = path.join(agentDir, 'logs', 'agent.log');
const port = String(config.port);
const host = config.host;
const origin = config.publicUrl;
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

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** What was appended to `file` from byte `offset` on. */
function readFrom(file: string, offset: number): string {
  const fd = fs.openSync(file, 'r');
  try {
    const length = Math.max(0, fs.fstatSync(fd).size - offset);
    const buffer = Buffer.alloc(length);
    fs.readSync(fd, buffer, 0, length, offset);
    return buffer.toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
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
function start(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  /** Where the child logs besides its output (the agent writes its log lines to a file of its own). */
  ownLog?: string,
): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  children.push(child);
  child.on('exit', (code, signal) => {
    if (!stopping) {
      const [line, file] = lastWords(logFile, ownLog);
      fail(`the ${name} exited (${signal ?? `code ${code}`}): ${line} (log: ${file})`);
    } else if (code !== 0)
      process.stderr.write(`quickstart: the ${name} stopped with ${signal ?? `code ${code}`}; see ${logFile}\n`);
  });
  return child;
}

/**
 * The last line a child wrote (its error message when it failed), without colours, and the file
 * it is in: its output, else its own log (when given). A JSON log line is given by its message.
 */
function lastWords(logFile: string, ownLog?: string): [line: string, file: string] {
  const line = lastLine(logFile);
  if (line !== '(no output)' || ownLog === undefined) return [line, logFile];
  return [lastLine(ownLog), ownLog];
}

/** The last line of a log file, without colours; a JSON log line (pino's) by its message. */
function lastLine(logFile: string): string {
  let text = '';
  try {
    text = fs.readFileSync(logFile, 'utf8');
  } catch {
    return '(no output)';
  }
  let line = stripVTControlCharacters(text).trimEnd().split('\n').pop()?.trim() ?? '';
  if (line.startsWith('{')) {
    try {
      const record = JSON.parse(line) as { msg?: unknown; err?: { message?: unknown } };
      if (typeof record.msg === 'string') {
        line = typeof record.err?.message === 'string' ? `${record.msg}: ${record.err.message}` : record.msg;
      }
    } catch {
      // not a JSON line: shown as it is
    }
  }
  return line === '' ? '(no output)' : line.length > 500 ? `${line.slice(0, 500)}…` : line;
}

/** What stands in the way of a quick start on this data directory and port, as one line, or null. */
async function obstacle(): Promise<string | null> {
  const quickstart = lockHolderPid(lockFile);
  if (quickstart !== null) {
    return `another quick start (pid ${quickstart}) is running with the data directory ${dataDir}; stop it (Ctrl-C in its terminal), or give this one another DROVER_DATA_DIR and DROVER_PORT`;
  }
  const coordinator = dataDirHolder(dataDir);
  if (coordinator !== null) {
    return `a drover-coordinator (pid ${coordinator}) is running with the data directory ${dataDir}; stop it first`;
  }
  const agent = lockHolderPid(path.join(agentDir, AGENT_LOCK_FILE));
  if (agent !== null) {
    return `a drover-agent (pid ${agent}) is running with the state directory ${agentDir}; stop it first`;
  }
  const listen = await checkListen(host, config.port);
  if (listen) return `${listen.message}; stop it, or set DROVER_PORT (and DROVER_HOST) to another address`;
  return null;
}

// Whatever ends this process, the children must not outlive it: each gets a SIGTERM (a second
// one after the graceful stop began, when the user pressed Ctrl-C twice, which stops it at once).
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  logFile: string,
  timeoutMs = 30_000,
  ownLog?: string,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > until) {
      const [line, file] = lastWords(logFile, ownLog);
      fail(`timed out after ${timeoutMs / 1000} s waiting for ${what}; its log ${file} ends with: ${line}`);
    }
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

const inTheWay = await obstacle();
if (inTheWay) fail(inTheWay);
if (process.argv.includes('--check')) process.exit(0);

fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
try {
  process.once('exit', acquirePidLock(lockFile)); // released however this process ends
} catch (error) {
  if (!isLockHeldError(error)) throw error;
  fail((await obstacle()) ?? `another quick start (pid ${error.pid}) is running with the data directory ${dataDir}`);
}
const firstRun = !fs.existsSync(path.join(dataDir, 'drover.sqlite'));
let state = loadState();
if (firstRun) {
  state = {
    email: process.env.DROVER_BOOTSTRAP_EMAIL ?? 'admin@localhost',
    password: process.env.DROVER_BOOTSTRAP_PASSWORD ?? randomBytes(15).toString('base64url'),
  };
  saveState(state);
  say(`First run: the owner will be ${state.email} (data in ${dataDir}).`);
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
say(`Starting the coordinator on ${origin} (log: ${coordinatorLog})...`);
const logStart = fileSize(coordinatorLog);
start(
  'coordinator',
  [...shebangNodeFlags(path.join(root, coordinatorMain)), coordinatorMain, 'start'],
  coordinatorEnv,
  coordinatorLog,
);
// Ready once it printed its banner (not merely once something answers on the port).
await waitFor(
  'the coordinator',
  async () => (readFrom(coordinatorLog, logStart).includes('Drover coordinator listening on') ? true : undefined),
  coordinatorLog,
);

const { token: session } = await api<{ token: string }>('POST', '/auth/login', null, {
  email: creds.email,
  password: creds.password,
});
const orgs = await api<{ id: string; role: string }[]>('GET', '/orgs', session);
const orgId = orgs.find((o) => o.role === 'owner')?.id ?? fail('the quickstart owner owns no organization');

const agentCli = ['agent/dist/cli/main.js'];
const agentEnv: NodeJS.ProcessEnv = { ...process.env, DROVER_AGENT_STATE_DIR: agentDir };
if (!fs.existsSync(path.join(agentDir, 'agent.json'))) {
  say(`Enrolling the local agent (state in ${agentDir})...`);
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
say(`Starting the local agent (output: ${agentOut}) and waiting for it to report the workflow "hello"...`);
start('agent', [...agentCli, 'run', '--state-dir', agentDir], agentEnv, agentOut, agentLog);

await waitFor(
  'the agent to report the hello workflow',
  async () => {
    const workflows = await api<{ name: string; agentId: string }[]>('GET', `/orgs/${orgId}/workflows`, session);
    return workflows.some((w) => w.name === 'hello' && w.agentId === agentId) ? true : undefined;
  },
  agentOut,
  undefined,
  agentLog,
);

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

/**
 * A command of the checkout (`drover`, `drover-agent`) as a path that works pasted in any shell,
 * whatever its directory and its `node` (the command picks a Node.js Drover runs on).
 */
const command = (name: string): string => shellWord(path.join(root, name));
const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

say();
say(`Drover is running: coordinator ${origin} (log: ${coordinatorLog}),`);
say(`local agent ${agentId} (log: ${agentLog}) with the workflow "hello";`);
say(`read its log with: ${command('drover-agent')} logs --state-dir ${shellWord(agentDir)}`);
say(`Dashboard: ${origin}/ (open it in a browser and sign in as the owner)`);
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
say('The same with the drover command line (exit code 0 when the job succeeded):');
say(`  DROVER_URL=${origin} DROVER_TOKEN=${creds.apiToken} \\`);
say(`    ${command('drover')} run ${creds.syncTriggerId} --param who=Drover --wait`);
say();
say(
  `These commands work from any directory: ${['drover', 'drover-agent', 'drover-coordinator'].map(command).join(', ')}.`,
);
say(`To call them by name, put the checkout on your PATH: export PATH=${shellWord(root)}:"$PATH"`);
say();
say('Press Ctrl-C to stop both.');
