/**
 * Benchmark: a job's log at its cap. Goal: reading the largest job (a log at
 * DROVER_JOB_LOG_MAX_BYTES, 16 MiB by default) costs the coordinator a few MB of memory, not
 * several times the log, however often it is read; and sending the log, past the cap, costs
 * each batch about the same.
 *
 *   pnpm build && pnpm bench bench/job-log.ts [--cap-mib 16] [--send-mib 24] [--reads 7] [--postgres]
 *
 * The coordinator is the real `drover-coordinator start` in a child process (its VmRSS read from
 * /proc). A simulated agent (its own key, signed requests) enrolls, reports a workflow, takes a job
 * run by hand and sends it `--send-mib` MiB of log text in batches as large as the body limit
 * allows (1 MiB bodies of 90 lines of 10 KiB), then finishes it. The log passes the cap, so the
 * coordinator keeps its head and its newest lines. Then the job is read `--reads` times as the
 * dashboard and `drover job` read it: the job detail's default page (500 lines, ~1 MiB at most),
 * and the whole stored log page after page (5,000 lines or ~1 MiB each). Each step prints the
 * coordinator's VmRSS after it and the peak sampled every 20 ms during it.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { DEPLOY_WORKFLOW } from './lib/seed.js';
import { CHILD_OWNER, memoryMb, startChildCoordinator, type ChildCoordinator } from './lib/child-coordinator.js';
import { jsonCall, request, SimAgent } from './lib/fleet-sim.js';
import { integerOption } from './lib/options.js';
import { startBenchPostgres, type BenchPostgres } from './lib/postgres.js';
import { machineNote, median } from './lib/report.js';

const { values } = parseArgs({
  options: {
    'cap-mib': { type: 'string', default: '16' },
    'send-mib': { type: 'string', default: '24' },
    reads: { type: 'string', default: '7' },
    postgres: { type: 'boolean', default: false },
  },
});
const capMib = integerOption('cap-mib', values['cap-mib']!, 1);
const sendMib = integerOption('send-mib', values['send-mib']!, 1);
const reads = integerOption('reads', values.reads!, 1);

const LINE_BYTES = 10 * 1024;
const LINES_PER_BATCH = 90;
const mib = (bytes: number) => bytes / 1024 / 1024;

console.log(
  `job log: cap ${capMib} MiB, ${sendMib} MiB sent, ${reads} reads, ${values.postgres ? 'PostgreSQL' : 'SQLite'}; ${machineNote()}`,
);
let pg: BenchPostgres | undefined;
let coordinator: ChildCoordinator | undefined;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Runs `step` while sampling the coordinator's VmRSS every 20 ms; prints it after, and the peak. */
async function measured<T>(label: string, step: () => Promise<T>): Promise<T> {
  const pid = coordinator!.pid;
  let peak = memoryMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, memoryMb(pid))), 20);
  const started = performance.now();
  try {
    return await step();
  } finally {
    clearInterval(timer);
    const after = memoryMb(pid);
    peak = Math.max(peak, after);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  ${label.padEnd(52)} ${seconds.toFixed(2).padStart(6)} s   RSS after ${after.toFixed(1).padStart(6)} MiB   peak ${peak.toFixed(1).padStart(6)} MiB`,
    );
  }
}

try {
  const env: Record<string, string> = { DROVER_JOB_LOG_MAX_BYTES: String(capMib * 1024 * 1024) };
  if (values.postgres) {
    pg = await startBenchPostgres();
    env.DROVER_DATABASE_URL = await pg.createDatabase();
  }
  coordinator = await startChildCoordinator({ env });
  const origin = coordinator.url;
  const base = `${origin}/v1`;
  const session = (await jsonCall(`${base}/auth/login`, { method: 'POST', body: CHILD_OWNER })).token as string;
  const orgId = (await jsonCall(`${base}/orgs`, { token: session }))[0].id as string;
  const manage = (path: string, body: unknown, expected = 200) =>
    jsonCall(`${base}/orgs/${orgId}${path}`, { method: 'POST', token: session, body, expected, agent: keepAlive });

  const { token: enrollment } = await manage('/enrollment-tokens', {}, 201);
  const agent = await SimAgent.enroll(origin, enrollment as string, 0);
  const put = await agent.signedJson(origin, 'PUT', '/v1/agent/workflows', { workflows: [DEPLOY_WORKFLOW] });
  if (put.status !== 200) throw new Error(`PUT workflows: ${put.status} ${put.text}`);
  const trigger = await manage(
    '/triggers',
    { name: 'bench', agentId: agent.agentId, scopeType: 'workflow', workflowName: 'deploy', responseMode: 'async' },
    201,
  );
  const { jobId } = await manage(`/triggers/${trigger.id}/run`, { params: { env: 'staging' } }, 202);
  const report = async (move: string, body: unknown) => {
    const answer = await agent.signedJson(origin, 'POST', `/v1/agent/jobs/${jobId}/${move}`, body, keepAlive);
    if (answer.status !== 200) throw new Error(`${move}: HTTP ${answer.status} ${answer.text.slice(0, 200)}`);
    return answer;
  };
  await report('start', {});

  console.log(`coordinator pid ${coordinator.pid}: idle, one job running`);
  await measured('idle', async () => {});

  // The log: batches of 90 lines of 10 KiB, each body ~0.9 MiB (the body limit is 1 MiB).
  const batches = Math.ceil((sendMib * 1024 * 1024) / (LINE_BYTES * LINES_PER_BATCH));
  const before: number[] = [];
  const after: number[] = [];
  const capBatch = Math.floor((capMib * 1024 * 1024) / (LINE_BYTES * LINES_PER_BATCH));
  await measured(`send ${batches} batches (${sendMib} MiB of text)`, async () => {
    let seq = 0;
    for (let b = 0; b < batches; b++) {
      const at = new Date().toISOString();
      const lines = Array.from({ length: LINES_PER_BATCH }, () => {
        seq += 1;
        const head = `line ${seq} `;
        return { seq, at, stream: 'stdout', text: head + 'x'.repeat(LINE_BYTES - head.length) };
      });
      const started = performance.now();
      await report('logs', { lines });
      (b < capBatch ? before : after).push(performance.now() - started);
    }
  });
  console.log(
    `    per batch: median ${median(before).toFixed(1)} ms under the cap (${before.length}), ` +
      `${after.length ? median(after).toFixed(1) : '-'} ms past it (${after.length}: each drops as much as it adds)`,
  );
  await report('finish', { status: 'success', exitCode: 0, errorMessage: null, output: {} });

  const summary = await jsonCall(`${base}/jobs/${jobId}?logsLimit=0`, { token: session, agent: keepAlive });
  console.log(
    `  stored: ${summary.logsTotal} lines, ${summary.logsDropped} dropped from the middle (cap ${capMib} MiB of text)`,
  );

  let pageBytes = 0;
  await measured(`read the job detail ${reads} times (default page)`, async () => {
    for (let i = 0; i < reads; i++) {
      const answer = await request(`${base}/jobs/${jobId}`, {
        headers: { authorization: `Bearer ${session}` },
        agent: keepAlive,
      });
      if (answer.status !== 200) throw new Error(`GET job: HTTP ${answer.status}`);
      pageBytes = Buffer.byteLength(answer.text);
    }
  });
  console.log(`    one answer: ${mib(pageBytes).toFixed(2)} MiB`);

  let wholeBytes = 0;
  let pages = 0;
  await measured(`read the whole log ${reads} times, page after page`, async () => {
    for (let i = 0; i < reads; i++) {
      wholeBytes = 0;
      pages = 0;
      for (let after = 0; ;) {
        const answer = await request(`${base}/jobs/${jobId}?logsAfter=${after}&logsLimit=5000`, {
          headers: { authorization: `Bearer ${session}` },
          agent: keepAlive,
        });
        if (answer.status !== 200) throw new Error(`GET job: HTTP ${answer.status}`);
        wholeBytes += Buffer.byteLength(answer.text);
        pages += 1;
        const page = JSON.parse(answer.text) as { logs: { seq: number }[]; logsMore: boolean };
        if (!page.logsMore) break;
        after = page.logs.at(-1)!.seq;
      }
    }
  });
  console.log(`    one whole read: ${pages} pages, ${mib(wholeBytes).toFixed(1)} MiB`);
  console.log(`peak over the coordinator's life (VmHWM): ${memoryMb(coordinator.pid, 'VmHWM').toFixed(1)} MiB`);
} finally {
  keepAlive.destroy();
  await coordinator?.close();
  await pg?.stop();
}
