import fs from 'node:fs';
import { fetch } from 'undici';
import { startBalancer, type Balancer } from './balancer.js';
import { coordinatorCli, type CoordinatorCli } from './coordinator-cli.js';
import { makeTempDir, OWNER_EMAIL, OWNER_PASSWORD } from './coordinator.js';
import { ApiClient } from './http.js';

const BANNER = /Drover coordinator listening on (http:\/\/127\.0\.0\.1:\d+)/;
const METRICS_TOKEN = 'cluster-test-metrics-token';

/** One `drover-coordinator start` process of a cluster. */
export interface ClusterNode {
  index: number;
  cli: CoordinatorCli;
  /** `http://127.0.0.1:<port>`: this coordinator itself, not through the balancer. */
  url: string;
  /** An unauthenticated client of this coordinator's API. */
  api: ApiClient;
  dataDir: string;
  readonly alive: boolean;
  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void>;
  /** The agent streams open on this coordinator (its `drover_agents_connected` gauge). */
  streams(): Promise<number>;
}

export interface Cluster {
  nodes: ClusterNode[];
  balancer: Balancer;
  /** The bootstrapped organization. */
  orgId: string;
  /** The bootstrapped owner, signed in through the balancer. */
  owner: ApiClient;
  close(): Promise<void>;
}

/**
 * `size` real coordinator processes (`drover-coordinator start`, as coordinator-cli.ts runs it)
 * on one database and one bucket (`env` names them), each with its own data directory and port 0,
 * all started at once with the same bootstrap settings and the same DROVER_PUBLIC_URL: the
 * balancer's (balancer.ts). Close it in an `afterAll` registered before any assertion.
 */
export async function startCluster(options: { size: number; env: Record<string, string> }): Promise<Cluster> {
  const balancer = await startBalancer({ size: options.size });
  const nodes: ClusterNode[] = [];
  const dirs: string[] = [];
  const close = async () => {
    for (const node of nodes) await node.kill();
    await balancer.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const started = Array.from({ length: options.size }, (_, index) => {
      const dataDir = makeTempDir(`drover-cluster-${index}-`);
      dirs.push(dataDir);
      const cli = coordinatorCli(['start', '--port', '0', '--data-dir', dataDir], {
        DROVER_PUBLIC_URL: balancer.url,
        DROVER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
        DROVER_BOOTSTRAP_PASSWORD: OWNER_PASSWORD,
        DROVER_BOOTSTRAP_ORG: 'acme',
        DROVER_METRICS_TOKEN: METRICS_TOKEN,
        ...options.env,
      });
      return { index, cli, dataDir };
    });
    for (const { index, cli, dataDir } of started) {
      const url = (await cli.waitFor(BANNER, 60_000))[1]!;
      nodes.push(clusterNode(index, cli, url, dataDir));
    }
    balancer.setBackends(nodes.map((n) => n.url));
    const owner = await new ApiClient(`${balancer.url}/v1`).login(OWNER_EMAIL, OWNER_PASSWORD);
    const orgs = await owner.get<{ id: string; name: string }[]>('/orgs');
    const orgId = orgs.body.find((o) => o.name === 'acme')?.id;
    if (!orgId) throw new Error(`bootstrapped organization not found: ${orgs.text}`);
    return { nodes, balancer, orgId, owner, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function clusterNode(index: number, cli: CoordinatorCli, url: string, dataDir: string): ClusterNode {
  const alive = () => cli.child.exitCode === null && cli.child.signalCode === null;
  return {
    index,
    cli,
    url,
    api: new ApiClient(`${url}/v1`),
    dataDir,
    get alive() {
      return alive();
    },
    async kill() {
      if (alive()) cli.child.kill('SIGKILL');
      await cli.exited;
    },
    async streams() {
      const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      const text = await res.text();
      const match = /^drover_agents_connected (\d+)$/m.exec(text);
      if (!match) throw new Error(`no drover_agents_connected in /metrics (${res.status})`);
      return Number(match[1]);
    },
  };
}
