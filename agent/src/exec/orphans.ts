import fs from 'node:fs';

/**
 * Kills what is left of a step's process group after the agent itself died (kill -9, crash):
 * the step ran detached, so it outlived the agent. Only processes of that group whose
 * environment still carries `DROVER_JOB_ID=<jobId>` count, so that a recycled process group id
 * is never hit. Linux only (it reads /proc); elsewhere it does nothing. Returns the number of
 * processes found.
 */
export function killOrphanedStep(processGroup: number, jobId: string): number {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  const marker = `DROVER_JOB_ID=${jobId}`;
  const found: number[] = [];
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // pid (comm) state ppid pgrp ...: comm may contain spaces and parentheses, so parse after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== processGroup) continue;
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (environ.includes(marker)) found.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  for (const pid of found) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return found.length;
}
