-- Pending device sign-ins are limited per client (docs/cli.md, "drover login --browser") by the
-- key the other limits on unauthenticated calls count by: an IPv4 address whole, an IPv6 one by
-- its /64, which one host is commonly given whole (counted by the full address, one host could
-- start sign-ins without limit). `requested_from` stays the address shown to the approving user.
-- Rows last ten minutes: those of before keep their address as their key.
ALTER TABLE device_sign_ins ADD COLUMN client_key text NOT NULL DEFAULT '';
UPDATE device_sign_ins SET client_key = requested_from;
DROP INDEX device_sign_ins_pending_from;
CREATE INDEX device_sign_ins_pending_from ON device_sign_ins(client_key) WHERE status = 'pending';
