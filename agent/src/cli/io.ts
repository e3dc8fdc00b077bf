/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** Thrown by a command to end with this exit code after printing its own output. */
export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

/**
 * The exit code of a bad usage or setting (an unknown option, a bad value of a flag or of a
 * variable of /etc/drover/agent.env): the coordinator's, so that the unit's
 * `RestartPreventExitStatus=2` stops systemd restarting an agent that will refuse it again.
 */
export const CONFIG_ERROR_EXIT_CODE = 2;

/** The exit code of a command whose reader went away (EPIPE), as a shell gives a tool SIGPIPE ended. */
export const BROKEN_PIPE_EXIT_CODE = 141;

/**
 * For the commands that print and end (`status`, `logs`, `workflows`, `enroll`): when whoever reads
 * their output went away (`drover-agent logs | head -1`), the process exits 141, quietly, as a
 * Unix tool that SIGPIPE ended, rather than crashing on an unhandled 'error' event with Node's
 * stack. Another write error still throws. Not the daemon, which a reader going away must not stop.
 */
export function exitQuietlyOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(BROKEN_PIPE_EXIT_CODE);
    });
  }
}
