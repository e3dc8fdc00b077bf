/**
 * The tables `copy-data` moves from SQLite into PostgreSQL (docs/scaling.md, "Moving a
 * coordinator"), in an order where every row's foreign keys point at rows already copied.
 * A table of either schema that is neither here nor in NOT_COPIED stops the copy before it starts
 * (a migration that forgot this list), and a test holds the lists to both migrated schemas.
 */
export const COPIED_TABLES = [
  'server_secrets',
  'users',
  'orgs',
  'memberships',
  'org_invitations',
  'enrollment_tokens',
  'agents',
  'agent_nonces',
  'workflows',
  'triggers',
  'api_tokens',
  'storage_bindings',
  'audit_log',
  'jobs',
  'job_logs',
  'job_log_usage',
  'idempotency_keys',
  'rate_counters',
  'rate_limit_blocks',
  'files',
  'applications',
  'releases',
  'device_bindings',
  'update_jobs',
  'rollouts',
  'rollout_devices',
  'rollout_events',
  'cron_occurrences',
  'batches',
  'signed_out_sessions',
  'chat_integrations',
  'chat_oauth_states',
  'oidc_states',
  'device_sign_ins',
  'chat_requests_seen',
  'chat_outbox',
] as const;

/** Tables each database keeps for itself, and why. */
export const NOT_COPIED: Readonly<Record<string, string>> = {
  schema_migrations: 'each database records its own migrations',
  change_counter: "the caches' change counter: moved by the triggers as the rows are written",
  ota_change_counter: "the OTA caches' change counter: moved by the triggers as the rows are written",
  job_number_counters: "PostgreSQL only: a missing row starts from the organization's highest job number",
};

/**
 * PostgreSQL columns that SQLite keeps as the table's implicit `rowid` (the order of insertion):
 * an identity column named `seq` where SQLite has none.
 */
export const ROWID_COLUMN = 'seq';
