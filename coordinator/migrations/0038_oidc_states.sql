-- Single sign-on (docs/sso.md): a sign-in in progress at the OpenID provider. Its `state` is
-- single use and valid ten minutes, bound to the browser that started it (the SHA-256 of the key
-- its cookie holds), with the nonce and the PKCE code verifier the callback checks, and the
-- dashboard path to go to afterwards. Only the state's SHA-256 is kept.
CREATE TABLE oidc_states (
  state_hash     TEXT PRIMARY KEY,
  browser_hash   TEXT NOT NULL,
  nonce          TEXT NOT NULL,
  code_verifier  TEXT NOT NULL,
  next_path      TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  expires_at     TEXT NOT NULL,
  used_at        TEXT
);
CREATE INDEX oidc_states_expiry ON oidc_states(expires_at);
