-- Whether the account's password was chosen by whoever invited its email (the invitation made the
-- account, docs/management.md "Members"), not by its holder. The holder's first single sign-on
-- removes such a password (docs/sso.md): someone who invited an email before its owner ever signed
-- in must not keep a way into the account once the owner uses it. Changing the password clears it.
ALTER TABLE users ADD COLUMN password_by_inviter boolean NOT NULL DEFAULT false;
-- Accounts made by an invitation (created with it, in the same instant) whose password has not
-- changed since (their session generation never moved).
UPDATE users SET password_by_inviter = true
 WHERE session_generation = 0 AND password_hash <> '!sso'
   AND EXISTS (SELECT 1 FROM org_invitations i WHERE lower(i.email) = lower(users.email) AND i.created_at = users.created_at);
