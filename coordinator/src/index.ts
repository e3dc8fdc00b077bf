export { createCoordinator, type Coordinator } from './coordinator.js';
export { loadConfig, ConfigError, type Config, type ConfigFlags } from './config/config.js';
export { createLogger } from './logger.js';
export { ErrorCodes, AppError, type ErrorCode } from './errors.js';
export { systemClock, type Clock } from './util/clock.js';
export { startServer, type RunningServer } from './server.js';
export { desiredManifest } from './domain/ota/agent-deploy.js';
export { loadCopyDataConfig, type CopyDataConfig } from './config/copy-data-config.js';
export { copyData, CopyDataError, type CopyDataReport } from './copy-data/copy-data.js';
