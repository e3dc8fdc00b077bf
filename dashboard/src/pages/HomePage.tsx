import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { agentsQuery } from '../api/queries';
import { EnrollAgent } from '../components/EnrollAgent';
import { ErrorMessage } from '../components/ErrorMessage';
import { NotFoundPage } from './NotFoundPage';
import { useOrg } from './use-org';

/** An organization's home: what to do first when it has no agent, else where things stand. */
export function HomePage() {
  const { orgId, org, loaded } = useOrg();
  const agents = useQuery(agentsQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  if (!org || !agents.data)
    return agents.error ? <ErrorMessage error={agents.error} /> : <p className="loading">Loading…</p>;
  const live = agents.data.filter((a) => a.status !== 'revoked');
  if (live.length === 0) return <FirstRun orgId={orgId} orgName={org.name} />;
  const connected = live.filter((a) => a.status === 'connected').length;
  return (
    <section>
      <h1>{org.name}</h1>
      <p>
        {connected} of {live.length} agent{live.length === 1 ? '' : 's'} connected.{' '}
        <Link to={`/orgs/${orgId}/agents`}>See the agents</Link>.
      </p>
    </section>
  );
}

function FirstRun({ orgId, orgName }: { orgId: string; orgName: string }) {
  return (
    <section aria-labelledby="welcome-heading">
      <h1 id="welcome-heading">Welcome to {orgName}</h1>
      <p>This organization has no agent yet. Agents are the machines that run your workflows. To get started:</p>
      <ol className="steps">
        <li>Enroll an agent on a machine: create an enrollment token below and run the command it shows.</li>
        <li>
          Add a workflow file (YAML) to the agent&apos;s <code>workflows/</code> folder; the agent reports it here.
        </li>
        <li>Create a trigger for the workflow, then run it by hand or with an API token.</li>
      </ol>
      <EnrollAgent orgId={orgId} />
    </section>
  );
}
