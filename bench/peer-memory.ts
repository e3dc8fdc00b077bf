/**
 * Benchmark: the idle coordinator's memory against the peer a user would build instead
 * (bench/peer/). Goal: Drover's RSS ≤ the peer's server and its Redis together, in one run.
 *
 *   pnpm build && pnpm bench bench/peer-memory.ts [--rounds 3] [--settle 30] [--aof]
 *
 * Drover: the built `drover-coordinator start` (its shebang's Node flags) in a child process, on
 * SQLite, with nothing optional configured (no chat, single sign-on, S3 or metrics): started once
 * to bootstrap its data directory, stopped, started again, and read `--settle` seconds later. The
 * peer: its Fastify `POST /run` (bench/peer/peer-server.ts, its types stripped beforehand, so that no
 * loader is in its memory) in a child process, and Redis, read after the same time. Rounds
 * alternate the two; the ratio printed is the median of each round's ratio. VmRSS from /proc, in
 * MiB; Drover's anonymous part (RssAnon) beside it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sleep } from './lib/agent.js';
import { memoryMb, startChildCoordinator } from './lib/child-coordinator.js';
import { integerOption } from './lib/options.js';
import { machineNote, median, writeJsonResult } from './lib/report.js';
import { startRedis } from './peer/redis.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    settle: { type: 'string', default: '30' },
    aof: { type: 'boolean', default: false },
  },
});
const rounds = integerOption('rounds', values.rounds, 1);
const settleS = integerOption('settle', values.settle, 1);
const aof = values.aof;
const GOAL = 1;

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
/**
 * The peer's server as its user runs it: plain `node` and JavaScript, no loader in its memory
 * (bench/peer/peer-server.ts with its types stripped here), started on the Redis port it is given.
 */
const PEER_MAIN = `${stripTypeScriptTypes(fs.readFileSync(path.join(BENCH_DIR, 'peer/peer-server.ts'), 'utf8'))}
const server = await startPeerServer(Number(process.argv[1]));
process.send?.('listening');
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
`;

async function droverRss(): Promise<{ rss: number; anon: number }> {
  const first = await startChildCoordinator();
  await first.stop();
  const again = await startChildCoordinator({ dataDir: first.dataDir });
  try {
    await sleep(settleS * 1000);
    return { rss: memoryMb(again.pid), anon: memoryMb(again.pid, 'RssAnon') };
  } finally {
    await again.close();
  }
}

async function peerRss(): Promise<{ server: number; redis: number }> {
  const redis = await startRedis({ aof });
  const server = spawn(process.execPath, ['--input-type=module', '-e', PEER_MAIN, String(redis.port)], {
    cwd: BENCH_DIR,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise((resolve) => server.on('exit', resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('message', () => resolve());
      void exited.then(() => reject(new Error('the peer server exited before listening')));
    });
    await sleep(settleS * 1000);
    return { server: memoryMb(server.pid!), redis: memoryMb(redis.pid) };
  } finally {
    server.kill('SIGTERM');
    await exited;
    await redis.close();
  }
}

console.log(
  `idle memory: drover-coordinator (SQLite, second start) vs the peer's server + Redis (${aof ? 'AOF everysec' : 'defaults'}), VmRSS ${settleS} s after start`,
);
console.log(machineNote());
const ratios: number[] = [];
const perRound: { drover: number; droverAnon: number; peerServer: number; redis: number }[] = [];
for (let round = 1; round <= rounds; round++) {
  const drover = await droverRss();
  const peer = await peerRss();
  const peerTotal = peer.server + peer.redis;
  ratios.push(drover.rss / peerTotal);
  perRound.push({ drover: drover.rss, droverAnon: drover.anon, peerServer: peer.server, redis: peer.redis });
  console.log(
    `round ${round}: Drover ${drover.rss.toFixed(1)} MiB (anonymous ${drover.anon.toFixed(1)}); ` +
      `peer ${peerTotal.toFixed(1)} MiB (server ${peer.server.toFixed(1)} + Redis ${peer.redis.toFixed(1)}); ratio ${(drover.rss / peerTotal).toFixed(2)}`,
  );
}
const ratio = median(ratios);
console.log(
  `Drover / peer idle RSS: ${ratio.toFixed(2)} (goal <= ${GOAL}: ${ratio <= GOAL ? 'met' : 'NOT met'}; rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})`,
);
writeJsonResult('peer-memory', { ratio, goal: GOAL, settleSeconds: settleS, aof, perRound });
