import { can, type Action } from '@drover/shared/roles';
import { skipToken, useQuery } from '@tanstack/react-query';
import { useLocation, useParams } from 'react-router';
import { liveBatchKey, type BatchDetail } from '../api/batches';
import { orgsQuery } from '../api/queries';
import type { JobDetail, Org } from '../api/types';

/** The organization of the address (`/orgs/:orgId/...`), once the user's organizations are read. */
export function useOrg(): { orgId: string; org: Org | undefined; loaded: boolean } {
  const { orgId = '' } = useParams();
  const orgs = useQuery(orgsQuery);
  return { orgId, org: orgs.data?.find((o) => o.id === orgId), loaded: orgs.data !== undefined };
}

/**
 * The organization the frame shows: the address's (`/orgs/:orgId/...`); on a job's or a batch's
 * page (`/api/jobs/:jobId`, `/api/batches/:batchId`, which name no organization), theirs once the
 * page has read it; on a page of no organization (`/account`), the one the link to it came from
 * (`frameOrg`).
 */
export function useFrameOrgId(): string | undefined {
  const { orgId, jobId, batchId } = useParams();
  const { state } = useLocation();
  // Reads the page's query from the cache only (skipToken: never fetches on its own).
  const job = useQuery<JobDetail>({ queryKey: ['jobs', jobId ?? '', 'live'], queryFn: skipToken });
  const batch = useQuery<BatchDetail>({ queryKey: liveBatchKey(batchId ?? ''), queryFn: skipToken });
  return orgId ?? job.data?.orgId ?? batch.data?.orgId ?? (state as FrameOrgState | null)?.frameOrgId;
}

/** The navigation state of a link to a page of no organization: the organization to keep in the frame. */
export interface FrameOrgState {
  frameOrgId?: string | undefined;
}

/**
 * Whether the signed-in user's role in `org` allows `action` (the coordinator's table,
 * docs/management.md "Roles"): the pages hide the controls a role cannot use; the API is the guard.
 */
export function allows(org: Pick<Org, 'role'> | undefined, action: Action): boolean {
  return org !== undefined && can(org.role, action);
}
