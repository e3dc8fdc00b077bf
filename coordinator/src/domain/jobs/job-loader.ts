import { batchLoader } from '../../util/batch-loader.js';
import type { Job, JobRepository } from '../model/jobs.js';

/**
 * Reads jobs by id, those asked for in one turn in a few statements (a batch's cancel ends
 * thousands; a reconnecting fleet is handed thousands). A job whose row does not parse (a damaged
 * database) is logged, read as absent, and `what` goes on without it: the others of its batch are
 * read all the same.
 */
export function jobLoader(
  jobs: Pick<JobRepository, 'findByIds'>,
  logger: { error(obj: object, msg: string): void },
  what: string,
): (id: string) => Promise<Job | undefined> {
  return batchLoader(async (ids: readonly string[]) => {
    const { jobs: found, damaged } = await jobs.findByIds(ids);
    for (const { id, column, error } of damaged) {
      logger.error(
        { err: error, jobId: id, column },
        `job ${id} is left out of ${what}: its ${column} does not parse (a damaged database)`,
      );
    }
    return new Map(found.map((job) => [job.id, job]));
  });
}
