-- Inviting is an owner's right, and an invitation no longer outlasts its inviter's: demoting an
-- owner, or removing them, revokes the pending invitations they sent (docs/management.md,
-- "Members"). Until now such invitations stayed, and any of them, an owner's role included, could
-- still be accepted. Those of inviters who are no owner of the organization today are revoked now.
--
-- Not breaking: rows of one table change status, as a revocation by an owner would.
UPDATE org_invitations SET status = 'revoked', ended_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE status = 'pending' AND created_by IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM memberships m
                    WHERE m.org_id = org_invitations.org_id AND m.user_id = org_invitations.created_by
                      AND m.role = 'owner');
