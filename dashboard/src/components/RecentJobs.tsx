import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { emailsOf, membersQuery, recentJobsQuery, type RecentJobsOf } from '../api/jobs';
import { Ago } from './Ago';
import { ErrorMessage } from './ErrorMessage';
import { JobLeadCells } from './JobFacts';

/**
 * The last jobs of a trigger or an agent, newest first, refreshed while the page is on screen,
 * with a link to all of them on the Jobs page (`allWords`).
 */
export function RecentJobs({ orgId, of, allWords }: { orgId: string; of: RecentJobsOf; allWords: string }) {
  const jobs = useQuery(recentJobsQuery(orgId, of));
  const members = useQuery(membersQuery(orgId));
  const emails = emailsOf(members.data);
  return (
    <div className="panel">
      <h2 id="recent-jobs-heading">Recent jobs</h2>
      <ErrorMessage error={jobs.error} />
      {jobs.data && jobs.data.length === 0 && <p>No job yet.</p>}
      {jobs.data && jobs.data.length > 0 && (
        <div className="table-scroll">
          <table aria-labelledby="recent-jobs-heading">
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Status</th>
                <th scope="col">Started by</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {jobs.data.map((job) => (
                <tr key={job.id}>
                  <JobLeadCells job={job} emails={emails} />
                  <td>
                    <Ago at={job.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p>
        <Link to={`/orgs/${orgId}/jobs?${new URLSearchParams(of)}`}>{allWords}</Link>
      </p>
    </div>
  );
}
