import { roleWithArticle } from '@drover/shared/roles';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useNavigate } from 'react-router';
import { api, apiPath } from '../api/client';
import { myInvitationsQuery, type Invitation } from '../api/access';
import { orgsQuery } from '../api/queries';
import type { Org } from '../api/types';
import { ErrorMessage } from '../components/ErrorMessage';
import { dateTime } from '../components/time';

/**
 * The signed-in user's pending invitations, each to accept (joining its organization, whose home
 * then opens) or decline. Nothing when there is none, unless `always` (the account page says so).
 */
export function MyInvitations({ always = false }: { always?: boolean }) {
  const invitations = useQuery(myInvitationsQuery);
  if (invitations.error) return <ErrorMessage error={invitations.error} />;
  if (!invitations.data) return null;
  if (invitations.data.length === 0) {
    return always ? (
      <section aria-labelledby="invitations-heading" className="panel">
        <h2 id="invitations-heading">Invitations</h2>
        <p className="hint">No invitation is waiting for you.</p>
      </section>
    ) : null;
  }
  return (
    <section aria-labelledby="invitations-heading" className="panel">
      <h2 id="invitations-heading">Invitations</h2>
      <p className="hint">You become a member of an organization when you accept its invitation.</p>
      <ul className="invitations">
        {invitations.data.map((i) => (
          <li key={i.id} aria-label={`Invitation to ${i.orgName}`}>
            <AnswerInvitation invitation={i} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function AnswerInvitation({ invitation }: { invitation: Invitation }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const settled = () => {
    void queryClient.invalidateQueries({ queryKey: myInvitationsQuery.queryKey });
    void queryClient.invalidateQueries({ queryKey: orgsQuery.queryKey });
  };
  const accept = useMutation({
    mutationFn: () => api<Org>('POST', apiPath`/invitations/${invitation.id}/accept`),
    onSuccess: (org) => {
      settled();
      void navigate(`/orgs/${org.id}`);
    },
    onError: settled,
  });
  const decline = useMutation({
    mutationFn: () => api<Invitation>('POST', apiPath`/invitations/${invitation.id}/decline`),
    onSettled: settled,
  });
  const busy = accept.isPending || decline.isPending;
  return (
    <>
      <p>
        <strong>{invitation.orgName}</strong> invites you as {roleWithArticle(invitation.role)}
        {invitation.invitedBy && <> ({invitation.invitedBy.email})</>}, until {dateTime(invitation.expiresAt)}.
      </p>
      <div className="actions">
        <button type="button" onClick={() => accept.mutate()} disabled={busy}>
          Accept and join {invitation.orgName}
        </button>
        <button type="button" onClick={() => decline.mutate()} disabled={busy}>
          Decline
        </button>
      </div>
      <ErrorMessage error={accept.error ?? decline.error} />
    </>
  );
}
