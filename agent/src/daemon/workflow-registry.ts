import type { Logger } from 'pino';
import type { WorkflowDefinition } from '@drover/shared';
import type { Masker } from '../exec/secret-masker.js';
import { answerMessage, signedCall, type SignedCaller } from '../http/client.js';
import { reportDigest, type ClaimableReport } from './report-claims.js';
import {
  formatProblem,
  loadWorkflows,
  watchWorkflows,
  type LoadedWorkflow,
  type WorkflowProblem,
  type WorkflowWatcher,
} from '../workflows/index.js';

export interface WorkflowSummary {
  loaded: number;
  invalid: { file: string; message: string }[];
}

export interface WorkflowRegistryOptions {
  dir: string;
  caller: SignedCaller;
  logger: Logger;
  /** After each load (status.json). */
  onLoaded?(summary: WorkflowSummary): void;
  /** Masks the machine's secret values out of the definitions sent to the coordinator. */
  masker?(): Promise<Masker>;
  /**
   * Workflows built into the agent (self-update's `drover-agent-update`): reported with the files'
   * ones, run only as an application's update workflow; a file of the same name is skipped.
   */
  builtins?: WorkflowDefinition[];
}

/**
 * The workflows of the workflows directory, as the daemon knows them: loaded at start, reloaded
 * when the directory changes, reported to the coordinator (`PUT /v1/agent/workflows`) at every
 * connect and whenever the set changes. Invalid files are logged and skipped.
 */
export class WorkflowRegistry implements ClaimableReport {
  #byName = new Map<string, LoadedWorkflow>();
  #problems: WorkflowProblem[] = [];
  #problemsLogged = '';
  #reported: string | null = null;
  /** The digest of the body the coordinator last accepted (null after a refusal or a failure). */
  #accepted: string | null = null;
  #chain: Promise<unknown> = Promise.resolve();
  #watcher: WorkflowWatcher | null = null;
  readonly #options: WorkflowRegistryOptions;
  readonly #builtins: Map<string, WorkflowDefinition>;

  constructor(options: WorkflowRegistryOptions) {
    this.#options = options;
    this.#builtins = new Map((options.builtins ?? []).map((w) => [w.name, w]));
  }

  get(name: string): WorkflowDefinition | undefined {
    return this.#builtins.get(name) ?? this.#byName.get(name)?.definition;
  }

  /** Why a job of this workflow cannot run here, or null when it can. */
  problemWith(name: string): string | null {
    if (this.#builtins.has(name))
      return `the workflow ${name} is built into the agent and runs only as an application's update workflow (over-the-air)`;
    if (this.#byName.has(name)) return null;
    const invalid = this.#problems.map((p) => p.file);
    const files = [...new Set(invalid)];
    return (
      `no valid workflow named ${name} in ${this.#options.dir}` +
      (files.length ? ` (invalid workflow files skipped: ${files.join(', ')})` : '')
    );
  }

  definitions(): WorkflowDefinition[] {
    const files = [...this.#byName.values()].map((w) => w.definition).filter((w) => !this.#builtins.has(w.name));
    return [...files, ...this.#builtins.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  summary(): WorkflowSummary {
    return {
      loaded: this.#byName.size,
      invalid: this.#problems.map((p) => ({
        file: p.file,
        message: p.line ? `line ${p.line}: ${p.message}` : p.message,
      })),
    };
  }

  /** Reads the directory again. */
  async load(): Promise<void> {
    const { logger } = this.#options;
    const loaded = await loadWorkflows(this.#options.dir);
    this.#byName = new Map(loaded.workflows.map((w) => [w.definition.name, w]));
    this.#problems = loaded.problems;
    const problemsKey = JSON.stringify(loaded.problems);
    if (problemsKey !== this.#problemsLogged) {
      for (const problem of loaded.problems)
        logger.warn({ file: problem.file }, `workflow file skipped: ${formatProblem(problem)}`);
      this.#problemsLogged = problemsKey;
    }
    for (const [name, workflow] of this.#byName)
      if (this.#builtins.has(name))
        logger.warn(
          { file: workflow.file },
          `workflow file skipped: ${workflow.file} defines ${name}, a workflow built into the agent`,
        );
    const names = [...this.#byName.keys()].sort();
    logger.info(
      { workflows: names },
      loaded.missingDirectory
        ? `the workflows directory ${this.#options.dir} does not exist yet; no workflows`
        : `${names.length} workflow${names.length === 1 ? '' : 's'} loaded${names.length ? `: ${names.join(', ')}` : ''}`,
    );
    this.#options.onLoaded?.(this.summary());
  }

  /** Reloads on every change of the directory, then calls `onChanged`. */
  watch(onChanged: () => void): void {
    this.#watcher = watchWorkflows(this.#options.dir, () => {
      void this.load()
        .then(onChanged)
        .catch((error: unknown) => this.#options.logger.error({ err: error }, 'could not reload the workflows'));
    });
  }

  /**
   * `PUT /v1/agent/workflows` with the current set: always with `force` (at connect), otherwise
   * only when it differs from what was last reported. Throws when the coordinator could not be
   * reached or answered 5xx/401 (the next connect tries again); a 422 is logged and not retried
   * until the files change.
   */
  report(force = false): Promise<void> {
    const next = this.#chain.then(() => this.#report(force));
    this.#chain = next.catch(() => {});
    return next;
  }

  /** ClaimableReport: the digest of the set as it would be sent now, when the coordinator accepted exactly that. */
  claim(): Promise<string | null> {
    const next = this.#chain.then(async () => {
      const { digest } = await this.#body();
      return digest === this.#accepted ? digest : null;
    });
    this.#chain = next.catch(() => {});
    return next;
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = null;
  }

  /**
   * The definitions as the coordinator may see them: every text masked (a secret value written
   * into a workflow, a literal token in `run` or a step's name, say, becomes `***`, as in every
   * other line sent there). A workflow whose name or params would change meaning once masked
   * (its name, a param's name, default, options or pattern) is left out, with an error.
   */
  async #masked(workflows: WorkflowDefinition[]): Promise<WorkflowDefinition[]> {
    const mask = await this.#options.masker?.();
    if (!mask || mask.longest === 0) return workflows;
    const shown: WorkflowDefinition[] = [];
    for (const workflow of workflows) {
      const fields = secretBearingFields(workflow, mask);
      if (fields.length > 0) {
        const file = this.#byName.get(workflow.name)?.file ?? 'a workflow file';
        this.#options.logger.error(
          { file, fields },
          `the workflow of ${file} is not reported to the coordinator: ${fields.join(', ')} ` +
            `contain${fields.length === 1 ? 's' : ''} the value of a secret from secrets.yaml, which never leaves this machine`,
        );
        continue;
      }
      shown.push(maskDefinition(workflow, mask));
    }
    return shown;
  }

  /** The report's body as it would be sent now (masked) and its digest. */
  async #body(workflows = this.definitions()) {
    const body = { workflows: await this.#masked(workflows) };
    return { body, digest: reportDigest(body) };
  }

  async #report(force: boolean): Promise<void> {
    const { logger, caller } = this.#options;
    const workflows = this.definitions();
    const key = JSON.stringify(workflows);
    if (!force && key === this.#reported) return;
    const { body, digest } = await this.#body(workflows);
    this.#accepted = null;
    const answer = await signedCall(caller, 'PUT', '/v1/agent/workflows', body);
    if (answer.status === 200) {
      this.#accepted = digest;
      if (key !== this.#reported)
        logger.info(`reported ${workflows.length} workflow${workflows.length === 1 ? '' : 's'} to the coordinator`);
      this.#reported = key;
      return;
    }
    // Refused for what it is (invalid, too large): sending it again would not help.
    if (answer.status === 422 || answer.status === 400 || answer.status === 413) {
      this.#reported = key;
      const details = (answer.body as { details?: unknown } | null)?.details;
      const items = refusedItems(details);
      logger.error(
        details === undefined ? {} : { details },
        `the coordinator refused the workflow set (${answerMessage(answer)})` +
          (items.length > 0 ? `: ${items.join('; ')}` : ''),
      );
      return;
    }
    throw new Error(`the workflows report failed (HTTP ${answer.status}: ${answerMessage(answer)})`);
  }
}

/**
 * What a refusal's `details` say, one `path: message` each: read only when they are a list of
 * those (docs/errors.md); anything else (an object, a text) is left to the log record's `details`.
 */
function refusedItems(details: unknown): string[] {
  if (!Array.isArray(details)) return [];
  return details
    .filter(
      (d): d is { path: string; message: string } => typeof d?.path === 'string' && typeof d?.message === 'string',
    )
    .map((d) => `${d.path}: ${d.message}`);
}

/** The fields that triggers and the coordinator act on, and that hold a secret value. */
function secretBearingFields(workflow: WorkflowDefinition, mask: Masker): string[] {
  const holds = (text: string | number | boolean | undefined) => typeof text === 'string' && mask(text) !== text;
  const fields = holds(workflow.name) ? ['name'] : [];
  (workflow.paramsSchema ?? []).forEach((param, i) => {
    for (const key of ['name', 'default', 'pattern'] as const)
      if (holds(param[key])) fields.push(`params[${i}].${key}`);
    if (param.options?.some(holds)) fields.push(`params[${i}].options`);
  });
  return fields;
}

/** The definition with its free text masked: description, version, secret names, params' descriptions, steps. */
function maskDefinition(w: WorkflowDefinition, mask: Masker): WorkflowDefinition {
  const text = <T>(value: T): T => (typeof value === 'string' ? (mask(value) as T) : value);
  return {
    ...w,
    description: text(w.description),
    version: text(w.version),
    ...(w.secretsKeys ? { secretsKeys: w.secretsKeys.map(mask) } : {}),
    ...(w.paramsSchema
      ? { paramsSchema: w.paramsSchema.map((p) => ({ ...p, description: text(p.description) })) }
      : {}),
    steps: w.steps.map((step) => ({
      ...step,
      name: text(step.name),
      run: mask(step.run),
      ...(step.args ? { args: step.args.map(mask) } : {}),
      ...(step.env ? { env: Object.fromEntries(Object.entries(step.env).map(([k, v]) => [mask(k), mask(v)])) } : {}),
      cwd: text(step.cwd),
    })),
  };
}
