import { isTerminalJobStatus } from '@drover/shared';
import type { Command } from 'commander';
import { batchPath, exitCodeOfBatch, type Batch, type BatchDetail } from '../batches/batch.js';
import { batchJobsTable, batchListTable, batchState, describeBatch, printJobEnds } from '../batches/format-batch.js';
import { waitForBatch } from '../batches/wait-batch.js';
import { sessionCaller } from '../callers.js';
import { CliExit } from '../errors.js';
import { integerFlag } from '../integer-flag.js';
import { printJson } from '../output/json.js';
import { sayNextPage } from '../output/next-page.js';
import type { Runtime } from '../runtime.js';
import { idFlag } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

interface ListFlags {
  trigger?: string;
  limit: string;
  cursor?: string;
  json?: boolean;
}

/** `drover batch list|show|cancel`: the batches of selector triggers' runs, one job per agent (a session). */
export function configureBatchCommand(program: Command, rt: Runtime): void {
  const group = program
    .command('batch')
    .description('the runs of selector triggers: a batch of one job per agent selected (a session)');

  group
    .command('list')
    .description("the organization's batches, newest first")
    .option('--trigger <trigger-id>', 'only the batches of this trigger')
    .option('--limit <n>', 'how many (1 to 200)', '20')
    .option('--cursor <cursor>', 'the page after the one that ended with this cursor (printed when more follow)')
    .option('--json', "print the API's answer as JSON")
    .action(async (flags: ListFlags, command: Command) => {
      const limit = integerFlag('--limit', flags.limit, 1, 200);
      const triggerId = idFlag('--trigger', 'trigger', flags.trigger);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const answer = await caller.api.call<Batch[]>('GET', `/orgs/${await caller.orgId()}/batches`, {
        query: { triggerId, limit, cursor: flags.cursor },
      });
      if (flags.json) printJson(rt, answer.body);
      else rt.out(answer.body.length === 0 ? 'No batches.\n' : batchListTable(answer.body));
      sayNextPage(rt, answer.headers, 'batches', 'drover batch list', {
        trigger: triggerId,
        limit: flags.limit === '20' ? undefined : limit,
      });
    });

  group
    .command('show')
    .description('one batch: its status, then one row per agent with its job')
    .argument('<batch-id>', 'the batch')
    .option('--wait', "wait for every job's end and exit as run --wait does (0 only when every job succeeded)")
    .option('--json', "print the API's answer as JSON")
    .action(async (batchId: string, flags: { wait?: boolean; json?: boolean }, command: Command) => {
      const { api } = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      if (!flags.wait) {
        const batch = await api.get<BatchDetail>(batchPath(batchId));
        return flags.json ? printJson(rt, batch) : rt.out(describeBatch(batch, api.origin));
      }
      const end = await waitForBatch(api, batchId, {
        signal: rt.signal,
        onJobsEnded: printJobEnds(rt),
        onOutage: (message) => rt.err(`drover: ${message}\n`),
      });
      if (flags.json) printJson(rt, end.batch);
      else rt.out(describeBatch(end.batch, api.origin));
      throw new CliExit(exitCodeOfBatch(end.batch.status));
    });

  group
    .command('cancel')
    .description('cancel every unfinished job of a batch: those not started at once, running ones by their agents')
    .argument('<batch-id>', 'the batch')
    .option('--json', "print the API's answer (the batch after it) as JSON")
    .action(async (batchId: string, flags: { json?: boolean }, command: Command) => {
      const { api } = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const before = await api.get<BatchDetail>(batchPath(batchId));
      const open = before.jobs.filter((j) => !isTerminalJobStatus(j.status)).length;
      const batch = open === 0 ? before : await api.post<BatchDetail>(`${batchPath(batchId)}/cancel`);
      if (flags.json) return printJson(rt, batch);
      const running = batch.jobs.filter((j) => !isTerminalJobStatus(j.status)).length;
      const cancelled = open - running;
      const lines =
        open === 0
          ? [`Batch ${batch.id} had ended: nothing to cancel`]
          : [
              `Cancelled ${cancelled} job${cancelled === 1 ? '' : 's'} of batch ${batch.id}`,
              ...(running === 0
                ? []
                : [
                    `Asked the agents of ${running} running job${running === 1 ? '' : 's'} to stop; ` +
                      'each is cancelled once its agent confirms',
                  ]),
            ];
      rt.out(
        `${lines.join('\n')}\nBatch ${batch.id}: ${batchState(batch.status, batch.jobs)}\n${batchJobsTable(batch.jobs)}`,
      );
    });
}
