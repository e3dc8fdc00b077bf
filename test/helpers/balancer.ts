import net from 'node:net';

/**
 * A TCP load balancer in front of several coordinators, as a cluster test needs one (production
 * puts an HTTP load balancer there: docs/operations.md, "Several coordinators"). Each new
 * connection goes to one coordinator and stays there; a coordinator that refuses the connection
 * (it is down) is skipped for the next. When a coordinator dies, the connections it held are cut,
 * and clients reconnect through the balancer to another.
 *
 * `url` spreads connections round robin; `urlPreferring(i)` sends them to coordinator `i` while it
 * is up, then to the next ones (a client pinned to one instance, as DNS or a sticky balancer
 * would, that fails over).
 */
export interface Balancer {
  /** Round robin over the coordinators. */
  url: string;
  /** Coordinator `i` first, the others in turn when it is down. */
  urlPreferring(i: number): string;
  /** The coordinators' `http://host:port`, in order (set once they listen). */
  setBackends(urls: readonly string[]): void;
  /** Connections accepted per coordinator so far. */
  readonly connections: number[];
  close(): Promise<void>;
}

export async function startBalancer(options: { size: number }): Promise<Balancer> {
  let backends: { host: string; port: number }[] = [];
  const connections: number[] = Array.from({ length: options.size }, () => 0);
  const sockets = new Set<net.Socket>();
  const servers: net.Server[] = [];
  let next = 0;

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  /** Connects `client` to the first backend of `order` that accepts, then pipes both ways. */
  const forward = (client: net.Socket, order: number[]) => {
    track(client);
    client.pause();
    const attempt = (k: number) => {
      if (k >= order.length || client.destroyed) {
        client.destroy();
        return;
      }
      const index = order[k]!;
      const backend = backends[index];
      if (!backend) return attempt(k + 1);
      const upstream = net.connect(backend.port, backend.host);
      const refused = () => {
        upstream.destroy();
        attempt(k + 1);
      };
      upstream.once('error', refused);
      upstream.once('connect', () => {
        upstream.off('error', refused);
        track(upstream);
        connections[index]! += 1;
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.resume();
      });
    };
    attempt(0);
  };

  const rotation = (first: number) => Array.from({ length: options.size }, (_, k) => (first + k) % options.size);
  const listen = async (onConnection: (client: net.Socket) => void): Promise<string> => {
    const server = net.createServer(onConnection);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  };

  const url = await listen((client) => {
    const first = next;
    next = (next + 1) % options.size;
    forward(client, rotation(first));
  });
  const preferring: string[] = [];
  for (let i = 0; i < options.size; i++) preferring.push(await listen((client) => forward(client, rotation(i))));

  return {
    url,
    urlPreferring: (i) => preferring[i]!,
    setBackends(urls) {
      backends = urls.map((u) => {
        const parsed = new URL(u);
        return { host: parsed.hostname, port: Number(parsed.port) };
      });
    },
    connections,
    async close() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    },
  };
}
