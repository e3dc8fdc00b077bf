-- Roles beyond owner and member (docs/management.md, "Roles"): `operator` and `viewer`, in a
-- membership and in an invitation.
ALTER TABLE memberships DROP CONSTRAINT memberships_role_check;
ALTER TABLE memberships ADD CONSTRAINT memberships_role_check
  CHECK (role IN ('owner', 'operator', 'member', 'viewer'));
ALTER TABLE org_invitations DROP CONSTRAINT org_invitations_role_check;
ALTER TABLE org_invitations ADD CONSTRAINT org_invitations_role_check
  CHECK (role IN ('owner', 'operator', 'member', 'viewer'));
