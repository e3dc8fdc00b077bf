import { useQuery } from '@tanstack/react-query';
import { Navigate } from 'react-router';
import { orgsQuery } from '../api/queries';

/** `/`: the first organization of the signed-in user. */
export function OrgRedirect() {
  const orgs = useQuery(orgsQuery);
  if (!orgs.data) return orgs.isPending ? <p className="loading">Loading…</p> : null;
  const first = orgs.data[0];
  if (!first) {
    return (
      <section>
        <h1>No organization yet</h1>
        <p>You are not a member of any organization. Ask an owner to add you, or create one with the API.</p>
      </section>
    );
  }
  return <Navigate to={`/orgs/${first.id}`} replace />;
}
