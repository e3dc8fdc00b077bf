import { useQuery } from '@tanstack/react-query';
import { Navigate } from 'react-router';
import { orgsQuery } from '../api/queries';
import { MyInvitations } from './MyInvitations';

/** `/`: the first organization of the signed-in user. */
export function OrgRedirect() {
  const orgs = useQuery(orgsQuery);
  if (!orgs.data) return orgs.isPending ? <p className="loading">Loading…</p> : null;
  const first = orgs.data[0];
  if (!first) {
    return (
      <section>
        <h1>No organization yet</h1>
        <p>
          You are not a member of any organization. Accept an invitation below, ask an owner to invite you, or create
          one with the API.
        </p>
        <MyInvitations />
      </section>
    );
  }
  return <Navigate to={`/orgs/${first.id}`} replace />;
}
