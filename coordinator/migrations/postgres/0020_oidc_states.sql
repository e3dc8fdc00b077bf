-- Single sign-on (docs/sso.md): a sign-in in progress at the OpenID provider. Its `state` is
-- single use and valid ten minutes, bound to the browser that started it (the SHA-256 of the key
-- its cookie holds), with the nonce and the PKCE code verifier the callback checks, and the
-- dashboard path to go to afterwards. Only the state's SHA-256 is kept.
CREATE TABLE oidc_states (
  state_hash     text PRIMARY KEY,
  browser_hash   text NOT NULL,
  nonce          text NOT NULL,
  code_verifier  text NOT NULL,
  next_path      text NOT NULL,
  created_at     text NOT NULL,
  expires_at     text NOT NULL,
  used_at        text
);
CREATE INDEX oidc_states_expiry ON oidc_states(expires_at);
