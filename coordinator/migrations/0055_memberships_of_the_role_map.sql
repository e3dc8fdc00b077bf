-- A membership the single sign-on role map gave or changed remembers it (docs/sso.md, "The role
-- map"): `sso_group` is the group whose entry set its role, `role_before_sso` the role it had
-- before the map first changed it (NULL when the map added the member). When the person signs in
-- again with no group that maps to the organization any more (removed from the group at the
-- provider, or the entry taken out of the map), the map's grant is withdrawn: the member is
-- removed, or given back the role they had before.
--
-- Of the memberships there are, those the map added are found by their `member.add` entry in the
-- audit log (only the role map writes that action) from when they joined or later; a role the map
-- changed on an invited member was not recorded beside the membership, and stays the owners' to
-- change until the map sets it again.
--
-- Not breaking: two columns, empty on the memberships there are but those the map added.
ALTER TABLE memberships ADD COLUMN sso_group TEXT;
ALTER TABLE memberships ADD COLUMN role_before_sso TEXT
  CHECK (role_before_sso IN ('owner', 'operator', 'member', 'viewer'));
UPDATE memberships SET sso_group = (
  SELECT json_extract(a.metadata, '$.group') FROM audit_log a
   WHERE a.org_id = memberships.org_id AND a.target_id = memberships.user_id
     AND a.action = 'member.add' AND a.created_at >= memberships.created_at
   ORDER BY a.id DESC LIMIT 1);
