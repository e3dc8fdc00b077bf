-- The first single sign-on takes back every account an invitation made, its password changed since
-- or not (docs/sso.md): whoever knew the inviter's password could change it, the inviter first.
-- 0044 marked the passwords nobody had changed; those changed since are marked now (a password
-- change no longer clears the mark). An account single sign-on already took back has no password.
UPDATE users SET password_by_inviter = 1
 WHERE password_by_inviter = 0 AND password_hash <> '!sso'
   AND EXISTS (SELECT 1 FROM org_invitations i WHERE i.email = users.email AND i.created_at = users.created_at);
