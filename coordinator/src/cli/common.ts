import type { Command } from 'commander';
import { ConfigError, loadConfig, type Config, type ConfigFlags } from '../config/config.js';

/** The flags every command that touches the data directory shares (CONTRACT §1). */
export function withServerOptions(command: Command): Command {
  return command
    .option('--port <port>', 'port to listen on (env DROVER_PORT, default 8080)')
    .option('--host <host>', 'address to bind (env DROVER_HOST, default 127.0.0.1)')
    .option('--data-dir <dir>', 'SQLite file, local blobs and server key (env DROVER_DATA_DIR, default ./data)')
    .option('--public-url <url>', 'URL clients reach this server at (env DROVER_PUBLIC_URL)')
    .option(
      '--log-level <level>',
      'fatal, error, warn, info, debug, trace or silent (env DROVER_LOG_LEVEL, default info)',
    );
}

/** Loads the configuration or exits 2 with the list of what is wrong. */
export function configOrExit(flags: ConfigFlags): Config {
  try {
    return loadConfig(process.env, flags);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`drover-coordinator: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
