import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { orgsQuery } from '../api/queries';
import type { Org } from '../api/types';

/** The organization of the address (`/orgs/:orgId/...`), once the user's organizations are read. */
export function useOrg(): { orgId: string; org: Org | undefined; loaded: boolean } {
  const { orgId = '' } = useParams();
  const orgs = useQuery(orgsQuery);
  return { orgId, org: orgs.data?.find((o) => o.id === orgId), loaded: orgs.data !== undefined };
}
