import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllProcessGroups, signalProcessGroup, terminateProcessGroup } from '../../src/exec/process-group.js';
import { eventually } from '../../../test/helpers/poll.js';

/** Whether any process of the group led by `pid` is alive (signal 0 checks without sending). */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('process groups of steps', () => {
  const leaders: number[] = [];
  afterEach(() => {
    for (const pid of leaders.splice(0)) signalProcessGroup(pid, 'SIGKILL');
  });

  it('kills a group whose SIGKILL is still to come when the agent exits (a process that ignores SIGTERM)', async () => {
    // The step's leader ends on SIGTERM; its background child ignores it, as `trap '' TERM` does,
    // and says so once it does.
    const ready = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-group-')), 'trapped');
    const step = spawn('sh', ['-c', `(trap '' TERM; : > "$0"; exec sleep 1004) & sleep 1000`, ready], {
      detached: true,
      stdio: 'ignore',
    });
    leaders.push(step.pid!);
    await eventually(() => fs.existsSync(ready));
    const exited = new Promise((resolve) => step.once('exit', resolve));
    terminateProcessGroup(step.pid!, 60_000);
    await exited;
    expect(groupAlive(step.pid!)).toBe(true); // the child lives on until the grace is over
    killAllProcessGroups();
    await eventually(() => !groupAlive(step.pid!), 5_000, 'the group gone');
  });
});
