import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { levelNumber } from '@drover/shared';
import type { Logger } from 'pino';
import { LABELS_ENV, loadAgentLabels, MAX_USER_LABELS } from '../daemon/agent-labels.js';
import { DEFAULTS } from '../daemon/defaults.js';
import { AgentError } from '../errors.js';
import { refuseRootInAnotherUsersDir } from '../state/owner.js';
import { givenDir, stateDirOf } from '../state/paths.js';
import { parseDuration } from '../workflows/duration.js';
import { CliExit, processIo, type CliIo } from './io.js';

/**
 * The daemon and what only it uses (the HTTP client, the stream, pino, the job runner), loaded
 * when `run` starts: the other commands, `--version` and `--help` never pay for them.
 */
async function loadDaemon() {
  const [daemon, signals, logger, files, secrets, dispatcher] = await Promise.all([
    import('../daemon/daemon.js'),
    import('../daemon/signals.js'),
    import('../logging/create-logger.js'),
    import('../state/files.js'),
    import('../workflows/known-secrets.js'),
    import('../http/dispatcher.js'),
  ]);
  return { ...daemon, ...signals, ...logger, ...files, ...secrets, ...dispatcher };
}

interface RunFlags {
  stateDir?: string;
  workflowsDir?: string;
  queueCapacity: number;
  shutdownGrace: number;
  jobTimeout: number;
  logLevel: string;
  streamIdleTimeout: number;
  postponeOptional: boolean;
  deployPollInterval: number;
  minDownloadSpeed: number;
  metricsFile?: string;
  label: string[];
  selfUpdate: boolean;
  selfUpdateDeadline: number;
  caFile?: string;
}

/** The environment variable of `--no-self-update` (`off`/`0`/`false`, or `on`/`1`/`true`). */
export const SELF_UPDATE_ENV = 'DROVER_AGENT_SELF_UPDATE';

/** `--ca-file` of `run` and `enroll`. */
export const CA_FILE_HELP =
  'PEM certificates to trust in addition to the default ones (a private CA of the coordinator or of an HTTPS proxy)';

/**
 * A bug must not vanish silently: say it in the agent's log, then die with 70 (the journal reports
 * the interrupted job at the next start). Also one line on stderr, which the service's journal
 * keeps (`systemctl status`): the log file may be what failed, on a full disk.
 */
export function crashHandler(
  logger: Pick<Logger, 'fatal'>,
  io: Pick<CliIo, 'err'> = processIo,
  exit: (code: number) => void = process.exit,
): (error: unknown) => void {
  return (error) => {
    const message = `the agent crashed: ${(error as Error)?.message ?? String(error)}`;
    logger.fatal({ err: error }, message);
    io.err(`drover-agent: ${message} (exit 70)\n`);
    exit(70);
  };
}

export function configureRunCommand(program: Command, _io: CliIo): void {
  program
    .command('run')
    .description(
      'run the agent: hold the stream to the coordinator and run the jobs it sends (stops on SIGTERM/SIGINT)',
    )
    .option('--state-dir <dir>', 'the agent state directory (env DROVER_AGENT_STATE_DIR)')
    .option('--workflows-dir <dir>', 'where the workflow files are (default: <state-dir>/workflows)')
    .addOption(
      new Option('--queue-capacity <n>', 'jobs the queue holds, the running one included; more are rejected')
        .argParser(integerOption('--queue-capacity', 1, 1000))
        .default(DEFAULTS.queueCapacity),
    )
    .addOption(
      new Option('--shutdown-grace <duration>', 'on SIGTERM, how long the running job may go on before it is killed')
        .argParser(durationOption('--shutdown-grace'))
        .default(DEFAULTS.shutdownGraceMs, '30s'),
    )
    .addOption(
      new Option('--job-timeout <duration>', 'the limit of a job whose workflow sets no timeout')
        .argParser(durationOption('--job-timeout'))
        .default(DEFAULTS.defaultJobTimeoutMs, '1h'),
    )
    .option(
      '--postpone-optional',
      'do not install optional releases (over-the-air updates); forced ones still are',
      false,
    )
    .addOption(
      new Option('--deploy-poll-interval <duration>', 'how often to check the signed list of desired releases')
        .argParser(durationOption('--deploy-poll-interval', 100))
        .default(DEFAULTS.deployPollIntervalMs, '5m'),
    )
    .addOption(
      new Option(
        '--min-download-speed <bytes-per-second>',
        'give up a download (artifact, input file) slower than this over 60 s; 0: never',
      )
        .env('DROVER_AGENT_MIN_DOWNLOAD_SPEED')
        .argParser(bytesPerSecondOption)
        .default(DEFAULTS.minDownloadSpeed),
    )
    .addOption(
      new Option(
        '--label <key=value>',
        `a label this agent reports (repeatable, at most ${MAX_USER_LABELS}; also env ${LABELS_ENV}=k=v,k2=v2, ` +
          'a flag winning for its key); os and arch are always added',
      )
        .argParser((value: string, previous: string[]) => [...previous, value])
        .default([], 'none'),
    )
    .option(
      '--no-self-update',
      `do not offer the built-in update workflow drover-agent-update (env ${SELF_UPDATE_ENV}=off); an update in flight is still settled`,
    )
    .addOption(
      new Option(
        '--self-update-deadline <duration>',
        'after a self-update, how long the new binary has to connect before the previous one is put back',
      )
        .argParser(durationOption('--self-update-deadline', 1000))
        .default(DEFAULTS.selfUpdateDeadlineMs, '2m'),
    )
    .option('--ca-file <file>', CA_FILE_HELP)
    .option('--log-level <level>', 'trace, debug, info, warn or error', levelOption, 'info')
    .addOption(
      new Option(
        '--metrics-file <path>',
        "also write the agent's counters there for node_exporter's textfile collector (a .prom file)",
      ).argParser(metricsFileOption),
    )
    .addOption(
      new Option('--stream-idle-timeout <duration>', 'reopen a stream silent for this long')
        .argParser(durationOption('--stream-idle-timeout'))
        .default(DEFAULTS.streamIdleTimeoutMs)
        .hideHelp(),
    )
    .action(async (flags: RunFlags, command: Command) => {
      // Settings first: a bad one stops the agent before anything is opened or written.
      const labels = loadAgentLabels({ flags: flags.label, env: process.env[LABELS_ENV] });
      const selfUpdate = selfUpdateSetting(
        command.getOptionValueSource('selfUpdate') === 'cli' ? flags.selfUpdate : undefined,
        process.env[SELF_UPDATE_ENV],
      );
      const {
        configureDispatcher,
        createAgentLogger,
        ensurePrivateDir,
        handleShutdownSignals,
        KnownSecrets,
        loadIdentity,
        proxyPasswordsInUse,
        startDaemon,
      } = await loadDaemon();
      // The proxy variables and the CA file: one the agent cannot use stops it here.
      configureDispatcher({ caFile: flags.caFile });
      const stateDir = stateDirOf(flags.stateDir);
      const workflowsDir =
        flags.workflowsDir === undefined ? undefined : givenDir('--workflows-dir', flags.workflowsDir);
      refuseRootInAnotherUsersDir(stateDir, 'run');
      ensurePrivateDir(stateDir);
      loadIdentity(stateDir); // not enrolled: say so before anything else is created
      // Secret values are masked in the agent's log as in everything it sends (the daemon reads the file).
      const secrets = new KnownSecrets(stateDir);
      // Steps inherit the proxy variables: a step that prints them (`env`) must not show the password.
      secrets.remember(proxyPasswordsInUse());
      const logger = createAgentLogger({
        stateDir,
        level: flags.logLevel,
        stdout: process.stdout.isTTY === true,
        secrets,
      });
      const crash = crashHandler(logger);
      process.once('uncaughtException', crash);
      process.once('unhandledRejection', crash);
      const daemon = await startDaemon({
        stateDir,
        workflowsDir,
        queueCapacity: flags.queueCapacity,
        shutdownGraceMs: flags.shutdownGrace,
        defaultJobTimeoutMs: flags.jobTimeout,
        streamIdleTimeoutMs: flags.streamIdleTimeout,
        postponeOptional: flags.postponeOptional,
        deployPollIntervalMs: flags.deployPollInterval,
        minDownloadSpeed: flags.minDownloadSpeed,
        metricsFile: flags.metricsFile,
        selfUpdate: selfUpdate.enabled,
        selfUpdateSource: selfUpdate.source,
        selfUpdateDeadlineMs: flags.selfUpdateDeadline,
        labels,
        logger,
        secrets,
      });
      const removeHandlers = handleShutdownSignals(daemon, logger);
      try {
        await daemon.stopped;
      } finally {
        removeHandlers();
      }
      // Stopped cleanly. Anything still holding the event loop (an idle keep-alive socket) must
      // not keep the process alive.
      // A self-update (or its rollback) stops the daemon to be started again: a non-zero code that
      // systemd's Restart=on-failure acts on (docs/agent.md, "Self-update").
      const code = daemon.exitCode ?? process.exitCode ?? 0;
      setTimeout(() => process.exit(code), 2000).unref();
      if (daemon.exitCode !== null) throw new CliExit(daemon.exitCode);
    });
}

/**
 * Whether the built-in update workflow is offered, and what said so for the daemon's log line
 * (`self-update is off (DROVER_AGENT_SELF_UPDATE=off)`: the package's unit sets the variable, and
 * a technician looks for the flag in vain). The flag (`flag`: given on the command line) wins.
 */
export function selfUpdateSetting(
  flag: boolean | undefined,
  env: string | undefined,
): { enabled: boolean; source: string } {
  if (flag !== undefined) return { enabled: flag, source: flag ? '--self-update' : '--no-self-update' };
  const enabled = selfUpdateFromEnv(env);
  return { enabled, source: (env ?? '').trim() === '' ? 'the default' : `${SELF_UPDATE_ENV}=${env!.trim()}` };
}

/** `DROVER_AGENT_SELF_UPDATE`: unset or empty is the default (on). */
export function selfUpdateFromEnv(value: string | undefined): boolean {
  const text = (value ?? '').trim().toLowerCase();
  if (text === '') return DEFAULTS.selfUpdate;
  if (['on', '1', 'true', 'yes'].includes(text)) return true;
  if (['off', '0', 'false', 'no'].includes(text)) return false;
  throw new AgentError('bad_config', `${SELF_UPDATE_ENV} expects on or off (1/0, true/false), got \`${value}\``);
}

function integerOption(flag: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
      throw new InvalidArgumentError(`${flag} expects a whole number from ${min} to ${max}, got \`${value}\`.`);
    }
    return n;
  };
}

function bytesPerSecondOption(value: string): number {
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) {
    throw new InvalidArgumentError(
      `--min-download-speed expects a whole number of bytes per second (0: no minimum), got \`${value}\`.`,
    );
  }
  return n;
}

function durationOption(flag: string, minMs = 0) {
  return (value: string): number => {
    const parsed = parseDuration(value);
    if ('problem' in parsed) throw new InvalidArgumentError(`${flag}: ${parsed.problem}.`);
    if (parsed.ms < minMs) throw new InvalidArgumentError(`${flag} must be at least ${minMs}ms, got \`${value}\`.`);
    return parsed.ms;
  };
}

/** A file in an existing directory (written by rename: the directory must take a temporary file beside it). */
function metricsFileOption(value: string): string {
  const file = path.resolve(value.trim());
  if (value.trim() === '' || value.endsWith('/')) {
    throw new InvalidArgumentError(`--metrics-file expects a file path, got \`${value}\`.`);
  }
  let dir: fs.Stats;
  try {
    dir = fs.statSync(path.dirname(file));
  } catch {
    throw new InvalidArgumentError(`--metrics-file: the directory ${path.dirname(file)} does not exist.`);
  }
  if (!dir.isDirectory()) throw new InvalidArgumentError(`--metrics-file: ${path.dirname(file)} is not a directory.`);
  if (fs.statSync(file, { throwIfNoEntry: false })?.isDirectory()) {
    throw new InvalidArgumentError(`--metrics-file expects a file path, got the directory ${file}.`);
  }
  return file;
}

function levelOption(value: string): string {
  const level = value.trim().toLowerCase();
  if (levelNumber(level) === null || !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(level)) {
    throw new InvalidArgumentError(`--log-level expects trace, debug, info, warn or error, got \`${value}\`.`);
  }
  return level;
}
