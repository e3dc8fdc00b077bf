-- Before invitations (migration 0002), an owner adding an unknown email made its account with a
-- password the owner chose, and the member in the same instant: the user's and the membership's
-- `created_at` are equal, in an organization that existed before (the owner of a new organization
-- joins it as it is made). Those passwords were the inviter's choice as much as an invitation's,
-- so the holder's first single sign-on takes them back too (docs/sso.md). An account single
-- sign-on made has no password.
UPDATE users SET password_by_inviter = true
 WHERE NOT password_by_inviter AND password_hash <> '!sso'
   AND EXISTS (SELECT 1 FROM memberships m JOIN orgs o ON o.id = m.org_id
                WHERE m.user_id = users.id AND m.created_at = users.created_at AND o.created_at <> m.created_at);
