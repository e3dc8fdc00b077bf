-- Over-the-air deployment (CONTRACT §7): applications and their releases. Created ahead of the
-- OTA endpoints so that a file referenced by a release can already refuse deletion
-- (`file_in_use`). Device bindings come with the OTA feature.

CREATE TABLE applications (
  id                    TEXT PRIMARY KEY,
  org_id                TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  slug                  TEXT NOT NULL,
  update_workflow_name  TEXT NOT NULL,
  default_channel       TEXT NOT NULL DEFAULT 'stable',
  created_at            TEXT NOT NULL,
  deleted_at            TEXT
);
-- A slug is unique within the organization among applications not deleted.
CREATE UNIQUE INDEX applications_org_slug ON applications(org_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE releases (
  id                TEXT PRIMARY KEY,
  application_id    TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  version           TEXT NOT NULL,
  sequence          INTEGER NOT NULL,   -- application-wide, increasing; orders releases
  channel           TEXT NOT NULL,
  update_policy     TEXT NOT NULL CHECK (update_policy IN ('mandatory', 'optional')),
  status            TEXT NOT NULL CHECK (status IN ('draft', 'published', 'yanked')),
  artifact_file_id  TEXT NOT NULL REFERENCES files(id),
  checksum_sha256   TEXT NOT NULL,
  size              INTEGER NOT NULL,
  notes             TEXT,
  created_at        TEXT NOT NULL,
  published_at      TEXT,
  yanked_at         TEXT,
  UNIQUE (application_id, sequence)
);
CREATE INDEX releases_app_channel ON releases(application_id, channel, sequence DESC);
-- A file referenced by a release that is not yanked cannot be deleted (file_in_use).
CREATE INDEX releases_artifact ON releases(artifact_file_id);
