-- Release keys (docs/ota.md, "Release keys"): the Ed25519 public keys (JSON array of standard
-- base64 strings) that must sign every release of the application; NULL: releases are not signed.
-- The rotations that changed the set, oldest first (JSON array of signed statements); NULL: none.
ALTER TABLE applications ADD COLUMN release_keys text;
ALTER TABLE applications ADD COLUMN release_key_rotations text;
-- A release's signature by one of its application's release keys (standard base64); NULL: unsigned.
ALTER TABLE releases ADD COLUMN signature text;
