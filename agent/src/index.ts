/** The agent's library API; the `drover-agent` CLI (src/cli/) is a thin layer over it. */
export { AgentError, isAgentError, type AgentErrorCode } from './errors.js';
export { AGENT_VERSION } from './version.js';
export { enrollAgent, describeOs, type EnrollOptions, type EnrollResult } from './enroll.js';
export { readAgentStatus, type AgentStatus } from './status/agent-status.js';
export { formatAgentStatus } from './status/format-status.js';
export { defaultStateDir, statePath, STATE_FILES } from './state/paths.js';
export { loadEnrollment, loadPrivateKey, saveEnrollment, savePrivateKey, type Enrollment } from './state/enrollment.js';
export { ensurePrivateDir, writeFileAtomic } from './state/files.js';
export { parseCoordinatorUrl } from './http/coordinator-url.js';
export { callCoordinator, signedCall, type HttpAnswer, type SignedCaller } from './http/client.js';
export { getSelf, postEnroll } from './http/agent-api.js';
export { startDaemon, loadIdentity, type Daemon } from './daemon/daemon.js';
export { DEFAULTS as DAEMON_DEFAULTS, type DaemonOptions } from './daemon/options.js';
export { StreamClient, type ConnectionState, type StreamClientOptions } from './stream/stream-client.js';
export { ReportClaims, reportDigest, type ClaimableReport } from './daemon/report-claims.js';
