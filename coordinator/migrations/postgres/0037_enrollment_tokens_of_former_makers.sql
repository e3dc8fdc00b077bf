-- An enrollment token no longer outlasts its maker's right to enroll agents: removing a member, or
-- making them a viewer, revokes the open enrollment tokens they made (docs/management.md,
-- "Listing and revoking enrollment tokens"). Enrollment refused such tokens already, but they were
-- listed `open` and worked again if their maker came back. Those of makers who may enroll no agent
-- in the organization today (not a member, or a viewer) are revoked now.
--
-- Not breaking: rows of one table are revoked, as a revocation by an owner would revoke them.
UPDATE enrollment_tokens SET revoked_at = now()
 WHERE used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
   AND NOT EXISTS (SELECT 1 FROM memberships m
                    WHERE m.org_id = enrollment_tokens.org_id AND m.user_id = enrollment_tokens.created_by
                      AND m.role <> 'viewer');
