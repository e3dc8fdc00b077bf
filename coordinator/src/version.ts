export const COORDINATOR_VERSION = '0.1.0';
