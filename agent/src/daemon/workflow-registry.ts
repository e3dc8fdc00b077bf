import type { Logger } from 'pino';
import type { WorkflowDefinition } from '@drover/shared';
import { createMasker } from '../exec/secret-masker.js';
import { answerMessage, signedCall, type SignedCaller } from '../http/client.js';
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
  /** The machine's secret values, masked out of the definitions sent to the coordinator. */
  secretValues?(): Promise<string[]>;
}

/**
 * The workflows of the workflows directory, as the daemon knows them: loaded at start, reloaded
 * when the directory changes, reported to the coordinator (`PUT /v1/agent/workflows`) at every
 * connect and whenever the set changes. Invalid files are logged and skipped.
 */
export class WorkflowRegistry {
  #byName = new Map<string, LoadedWorkflow>();
  #problems: WorkflowProblem[] = [];
  #problemsLogged = '';
  #reported: string | null = null;
  #chain: Promise<unknown> = Promise.resolve();
  #watcher: WorkflowWatcher | null = null;

  constructor(private readonly options: WorkflowRegistryOptions) {}

  get(name: string): WorkflowDefinition | undefined {
    return this.#byName.get(name)?.definition;
  }

  /** Why a job of this workflow cannot run here, or null when it can. */
  problemWith(name: string): string | null {
    if (this.#byName.has(name)) return null;
    const invalid = this.#problems.map((p) => p.file);
    const files = [...new Set(invalid)];
    return (
      `no valid workflow named ${name} in ${this.options.dir}` +
      (files.length ? ` (invalid workflow files skipped: ${files.join(', ')})` : '')
    );
  }

  definitions(): WorkflowDefinition[] {
    return [...this.#byName.values()].map((w) => w.definition).sort((a, b) => (a.name < b.name ? -1 : 1));
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
    const { logger } = this.options;
    const loaded = await loadWorkflows(this.options.dir);
    this.#byName = new Map(loaded.workflows.map((w) => [w.definition.name, w]));
    this.#problems = loaded.problems;
    const problemsKey = JSON.stringify(loaded.problems);
    if (problemsKey !== this.#problemsLogged) {
      for (const problem of loaded.problems)
        logger.warn({ file: problem.file }, `workflow file skipped: ${formatProblem(problem)}`);
      this.#problemsLogged = problemsKey;
    }
    const names = [...this.#byName.keys()].sort();
    logger.info(
      { workflows: names },
      loaded.missingDirectory
        ? `the workflows directory ${this.options.dir} does not exist yet; no workflows`
        : `${names.length} workflow${names.length === 1 ? '' : 's'} loaded${names.length ? `: ${names.join(', ')}` : ''}`,
    );
    this.options.onLoaded?.(this.summary());
  }

  /** Reloads on every change of the directory, then calls `onChanged`. */
  watch(onChanged: () => void): void {
    this.#watcher = watchWorkflows(this.options.dir, () => {
      void this.load()
        .then(onChanged)
        .catch((error: unknown) => this.options.logger.error({ err: error }, 'could not reload the workflows'));
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

  close(): void {
    this.#watcher?.close();
    this.#watcher = null;
  }

  /**
   * The definitions as the coordinator may see them: a secret value written into a workflow
   * (a literal token in `run`, say) is replaced by `***`, as in every other line sent there.
   */
  async #masked(workflows: WorkflowDefinition[]): Promise<WorkflowDefinition[]> {
    const values = (await this.options.secretValues?.()) ?? [];
    if (values.length === 0) return workflows;
    const mask = createMasker(values);
    return workflows.map((w) => ({
      ...w,
      description: typeof w.description === 'string' ? mask(w.description) : w.description,
      steps: w.steps.map((step) => ({
        ...step,
        run: mask(step.run),
        ...(step.args ? { args: step.args.map(mask) } : {}),
        ...(step.env ? { env: Object.fromEntries(Object.entries(step.env).map(([k, v]) => [k, mask(v)])) } : {}),
        ...(step.cwd === undefined ? {} : { cwd: mask(step.cwd) }),
      })),
    }));
  }

  async #report(force: boolean): Promise<void> {
    const { logger, caller } = this.options;
    const workflows = this.definitions();
    const key = JSON.stringify(workflows);
    if (!force && key === this.#reported) return;
    const answer = await signedCall(caller, 'PUT', '/v1/agent/workflows', {
      workflows: await this.#masked(workflows),
    });
    if (answer.status === 200) {
      if (key !== this.#reported)
        logger.info(`reported ${workflows.length} workflow${workflows.length === 1 ? '' : 's'} to the coordinator`);
      this.#reported = key;
      return;
    }
    // Refused for what it is (invalid, too large): sending it again would not help.
    if (answer.status === 422 || answer.status === 400 || answer.status === 413) {
      this.#reported = key;
      const details = (answer.body as { details?: { path: string; message: string }[] } | null)?.details ?? [];
      logger.error(
        { details },
        `the coordinator refused the workflow set (${answerMessage(answer)}): ` +
          details.map((d) => `${d.path}: ${d.message}`).join('; '),
      );
      return;
    }
    throw new Error(`the workflows report failed (HTTP ${answer.status}: ${answerMessage(answer)})`);
  }
}
