import { useQuery } from '@tanstack/react-query';
import { jobNumberQuery } from '../api/jobs';

/** `#12` for a job known by its id only; nothing until (or unless) its number is read. */
export function JobNumber({ jobId }: { jobId: string }) {
  const number = useQuery(jobNumberQuery(jobId));
  return number.data === undefined ? null : <>#{number.data} </>;
}
