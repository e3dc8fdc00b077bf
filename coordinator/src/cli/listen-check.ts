import net from 'node:net';

/** Why a server cannot listen on an address: `in_use`, `not_local`, `forbidden` or `other`. */
export interface ListenProblem {
  code: 'in_use' | 'not_local' | 'forbidden' | 'other';
  /** One line for a person: `port 8080 on 127.0.0.1 is in use by another program`. */
  message: string;
}

/**
 * Whether this process can listen on `host`:`port`, tried by listening there and closing at
 * once, before anything else is done: null when it can, otherwise why not. Port 0 always can.
 */
export async function checkListen(host: string, port: number): Promise<ListenProblem | null> {
  if (port === 0) return null;
  const server = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    return (
      listenProblem(error, host, port) ?? {
        code: 'other',
        message: `cannot listen on ${address(host, port)}: ${(error as Error).message}`,
      }
    );
  }
  await new Promise((resolve) => server.close(resolve));
  return null;
}

/**
 * What a failed `listen` means, for the errors a person can act on; null for any other error,
 * and for one that a listen did not raise: `start` asks this of whatever stopped the server from
 * starting, and a data directory's file it may not open (EACCES, restored as root) is no port.
 */
export function listenProblem(error: unknown, host: string, port: number): ListenProblem | null {
  const at = address(host, port);
  const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException;
  if (syscall !== 'listen' && syscall !== 'getaddrinfo') return null;
  switch (code) {
    case 'EADDRINUSE':
      return { code: 'in_use', message: `port ${port} on ${host} is in use by another program` };
    case 'EADDRNOTAVAIL':
      return { code: 'not_local', message: `cannot listen on ${at}: ${host} is not an address of this machine` };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { code: 'not_local', message: `cannot listen on ${at}: the host name ${host} does not resolve` };
    case 'EACCES':
    case 'EPERM':
      return {
        code: 'forbidden',
        message: `cannot listen on ${at}: permission denied${port < 1024 ? ' (ports below 1024 need privileges)' : ''}`,
      };
    default:
      return null;
  }
}

function address(host: string, port: number): string {
  return `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}
