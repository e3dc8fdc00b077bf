import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { jobPath, type Job } from '../jobs/job.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

export function configureCancelCommand(program: Command, rt: Runtime): void {
  program
    .command('cancel')
    .description('cancel a job: one not started yet at once, a running one by its agent (a session)')
    .argument('<job-id>', 'the job')
    .option('--json', "print the API's answer as JSON")
    .action(async (jobId: string, flags: { json?: boolean }, command: Command) => {
      const { api } = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const answer = await api.call<Job>('POST', `${jobPath(jobId)}/cancel`);
      if (flags.json) return printJson(rt, answer.body);
      rt.out(
        answer.status === 202
          ? `Asked the agent to stop job ${answer.body.id}; it is cancelled once the agent confirms\n`
          : `Cancelled job ${answer.body.id}\n`,
      );
    });
}
