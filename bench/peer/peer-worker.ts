/**
 * The peer's worker (bench/peer/README.md), a process of its own as an agent is: a BullMQ Worker
 * on the peer's queue that spawns each job's step, `date +%s%N` (the same program Drover's
 * dispatch benchmark runs), and tells its parent the clock the step printed.
 *
 *   node --import tsx bench/peer/peer-worker.ts <redis port>
 */
import { spawn } from 'node:child_process';
import { Worker } from 'bullmq';
import { PEER_QUEUE } from './peer-server.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || !process.send)
  throw new Error('usage: peer-worker.ts <redis port> (with an IPC channel)');

function runStep(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('date', ['+%s%N'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`date exited with ${code}`))));
  });
}

const worker = new Worker(
  PEER_QUEUE,
  async (job) => {
    const ns = await runStep();
    process.send!({ jobId: job.id, ns });
  },
  { connection: { host: '127.0.0.1', port }, concurrency: 4 },
);
worker.on('ready', () => process.send!({ ready: true }));
process.on('disconnect', () => void worker.close().then(() => process.exit(0)));
