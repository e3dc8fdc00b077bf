/**
 * The defaults of `drover-agent run` (docs/agent.md, "Run options"). A module of its own, with no
 * imports: the command line shows them without loading the daemon.
 */
export const DEFAULTS = {
  queueCapacity: 4,
  shutdownGraceMs: 30_000,
  defaultJobTimeoutMs: 3_600_000,
  killGraceMs: 5_000,
  streamIdleTimeoutMs: 45_000,
  flushTimeoutMs: 5_000,
  jobRetentionMs: 7 * 24 * 3_600_000,
  postponeOptional: false,
  deployPollIntervalMs: 300_000,
  selfUpdate: true,
  selfUpdateDeadlineMs: 120_000,
  /** Bytes per second, averaged over 60 s; 0: no minimum. */
  minDownloadSpeed: 1024,
} as const;
