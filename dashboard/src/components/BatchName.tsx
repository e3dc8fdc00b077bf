import { useQuery } from '@tanstack/react-query';
import { batchNumberQuery } from '../api/batches';

/** `batch #12` for a batch known by its id only; `a batch` until (or unless) its number is read. */
export function BatchName({ batchId }: { batchId: string }) {
  const number = useQuery(batchNumberQuery(batchId));
  return number.data === undefined ? <>a batch</> : <>batch #{number.data}</>;
}
