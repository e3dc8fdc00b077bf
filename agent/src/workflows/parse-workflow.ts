import {
  loadPatternEngine,
  MAX_CANCEL_GRACE_MS,
  PARAM_TYPES,
  PatternSet,
  ParamDefinition as ParamSchema,
  paramsSchemaProblems,
  WorkflowDefinition as DefinitionSchema,
  WorkflowStep as StepSchema,
  type ParamDefinition,
  type ParamType,
  type WorkflowDefinition,
  type WorkflowStep,
} from '@drover/shared';
import { isScalar, type Node as YamlNode } from 'yaml';
import { DURATION_EXPECTED, formatDuration, parseDuration } from './duration.js';
import { YamlReader, type FileProblem, type YamlPath } from './yaml-reader.js';

/** Keys of a workflow file, a step and a parameter (anything else is refused). */
export const WORKFLOW_KEYS = [
  'name',
  'description',
  'version',
  'params',
  'secrets',
  'timeout',
  'cancelGrace',
  'steps',
] as const;
export const STEP_KEYS = ['name', 'run', 'args', 'env', 'cwd', 'timeout', 'shell'] as const;
export const PARAM_KEYS = Object.keys(ParamSchema.properties) as readonly (keyof ParamDefinition)[];

/** Secret names and env keys become environment variables, so they must be valid names. */
const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';
const ENV_NAME_HINT = 'must be a name of letters, digits and `_`, not starting with a digit';
/**
 * A name JavaScript objects cannot hold as a plain key (it would set their prototype, and the
 * variable would vanish), and the coordinator refuses in every JSON body.
 */
export const RESERVED_NAME = '__proto__';
const RESERVED_HINT = '`__proto__` cannot be a variable name here: choose another name';
/**
 * The variable the agent marks a job's processes with (exec/orphans.ts): after a crash it finds
 * the processes a job left by it, so neither a step's `env` nor a secret may set it.
 */
export const JOB_ID_VARIABLE = 'DROVER_JOB_ID';
const JOB_ID_HINT = `\`${JOB_ID_VARIABLE}\` is set by the agent (it finds a job's processes by it after a crash): choose another name`;

/** What to do about a second YAML document in a workflow file. */
const ONE_WORKFLOW =
  'one workflow per file; move the second to a file of its own, or remove that line and what follows';

export interface ParsedWorkflowFile {
  /** The definition as reported to the coordinator (timeouts in ms), or null when invalid. */
  definition: WorkflowDefinition | null;
  problems: FileProblem[];
  /** The line of `name:` (for problems about names used by two files). */
  nameLine?: number;
}

/**
 * Parses one workflow file (docs/agent-protocol.md: one workflow per file) into the `WorkflowDefinition`
 * the agent reports, refusing unknown keys and anything the coordinator's `PutWorkflowsRequest`
 * schema or its `paramsSchema` rules would refuse, with the line and path of each problem.
 * `patterns`: the patterns of the agent's other workflow files read before this one (their
 * limits span the set the agent reports); the pattern engine is loaded only when a param has one.
 */
export async function parseWorkflowFile(
  file: string,
  text: string,
  patterns: PatternSet = new PatternSet(),
): Promise<ParsedWorkflowFile> {
  const y = new YamlReader(file, text, { oneDocument: ONE_WORKFLOW });
  if (!y.parsed) return { definition: null, problems: y.problems };
  if (y.root === null) {
    y.problem(null, [], 'the file is empty; expected a workflow with at least `name` and `steps`');
    return { definition: null, problems: y.problems };
  }
  const top = y.map(y.root, [], WORKFLOW_KEYS);
  if (!top) return { definition: null, problems: y.problems };

  const field = (key: string) => top.get(key)?.node ?? null;
  const has = (key: string) => top.has(key) && !isNull(y, field(key));
  const definition: Partial<WorkflowDefinition> = {};

  const props = DefinitionSchema.properties;
  if (!top.has('name')) y.problem(y.root, [], 'missing `name`: the name triggers use to run this workflow');
  else {
    const name = y.text(field('name'), ['name'], {
      minLength: 1,
      maxLength: props.name.maxLength,
      pattern: props.name.pattern,
      patternHint: 'must start with a letter or digit and contain only letters, digits, `_`, `.` and `-`',
    });
    if (name !== null) definition.name = name;
  }
  if (has('description')) {
    const description = y.text(field('description'), ['description'], { maxLength: props.description.maxLength });
    if (description !== null) definition.description = description;
  }
  if (has('version')) {
    const version = y.text(field('version'), ['version'], { minLength: 1, maxLength: props.version.maxLength });
    if (version !== null) definition.version = version;
  }
  if (has('params')) {
    const params = readParams(y, field('params'));
    if (params?.some((p) => p.pattern !== undefined)) await loadPatternEngine();
    if (params && paramsAreValid(y, params, patterns)) definition.paramsSchema = params;
  }
  if (has('secrets')) {
    const secrets = readSecretNames(y, field('secrets'));
    if (secrets) definition.secretsKeys = secrets;
  }
  if (top.has('timeout')) {
    const timeout = readDuration(y, field('timeout'), ['timeout']);
    if (timeout !== null) definition.timeout = timeout;
  }
  if (top.has('cancelGrace')) {
    const grace = readDuration(y, field('cancelGrace'), ['cancelGrace'], MAX_CANCEL_GRACE_MS);
    if (grace !== null) definition.cancelGrace = grace;
  }
  if (!top.has('steps')) y.problem(y.root, [], 'missing `steps`: the list of commands this workflow runs');
  else {
    const steps = readSteps(y, field('steps'));
    if (steps) definition.steps = steps;
  }

  const nameLine = y.line(top.get('name')?.node);
  if (y.problems.length > 0) {
    const problems = [...y.problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
    return { definition: null, problems, ...(nameLine ? { nameLine } : {}) };
  }
  return { definition: definition as WorkflowDefinition, problems: [], ...(nameLine ? { nameLine } : {}) };
}

function readSteps(y: YamlReader, node: YamlNode | null): WorkflowStep[] | null {
  const items = y.list(node, ['steps'], {
    min: DefinitionSchema.properties.steps.minItems,
    max: DefinitionSchema.properties.steps.maxItems,
  });
  if (!items) return null;
  const steps: WorkflowStep[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const step = readStep(y, item, ['steps', i]);
    if (step) steps.push(step);
    else ok = false;
  });
  return ok ? steps : null;
}

function readStep(y: YamlReader, node: YamlNode | null, path: YamlPath): WorkflowStep | null {
  const before = y.problems.length;
  const entries = y.map(node, path, STEP_KEYS);
  if (!entries) return null;
  const props = StepSchema.properties;
  const field = (key: string) => entries.get(key)?.node ?? null;
  const step: Partial<WorkflowStep> = {};
  if (entries.has('name')) {
    const name = y.text(field('name'), [...path, 'name'], { minLength: 1, maxLength: props.name.maxLength });
    if (name !== null) step.name = name;
  }
  if (!entries.has('run'))
    y.problem(node, path, 'missing `run`: the program (or, with `shell: true`, the command line) to run');
  else {
    const run = y.text(field('run'), [...path, 'run'], {
      minLength: 1,
      maxLength: props.run.maxLength,
      givenToPrograms: true,
    });
    if (run !== null) step.run = run;
  }
  if (entries.has('args')) {
    const items = y.list(field('args'), [...path, 'args'], { max: props.args.maxItems });
    if (items) {
      const args = items.map((item, i) =>
        y.text(item, [...path, 'args', i], { maxLength: props.args.items.maxLength, givenToPrograms: true }),
      );
      if (args.every((a): a is string => a !== null)) step.args = args;
    }
  }
  if (entries.has('env')) {
    const env = readEnv(y, field('env'), [...path, 'env']);
    if (env) step.env = env;
  }
  if (entries.has('cwd')) {
    const cwd = y.text(field('cwd'), [...path, 'cwd'], {
      minLength: 1,
      maxLength: props.cwd.maxLength,
      givenToPrograms: true,
    });
    if (cwd !== null) step.cwd = cwd;
  }
  if (entries.has('timeout')) {
    const timeout = readDuration(y, field('timeout'), [...path, 'timeout']);
    if (timeout !== null) step.timeout = timeout;
  }
  if (entries.has('shell')) {
    const shell = y.boolean(field('shell'), [...path, 'shell']);
    if (shell !== null) step.shell = shell;
  }
  if (step.shell === true && step.args !== undefined && step.args.length > 0) {
    // `/bin/sh -c` runs the command line of `run` alone: the arguments would be dropped unseen
    // (an `args: [--dry-run]` the step never gets).
    y.problem(
      field('args'),
      [...path, 'args'],
      'a step with `shell: true` runs the command line of `run`, and gets no `args`: ' +
        'write them into `run`, or remove `shell: true` to run `run` as a program with them',
    );
  }
  return y.problems.length === before ? (step as WorkflowStep) : null;
}

function readEnv(y: YamlReader, node: YamlNode | null, path: YamlPath): Record<string, string> | null {
  const entries = y.map(node, path);
  if (!entries) return null;
  const max = StepSchema.properties.env.maxProperties;
  if (entries.size > max) {
    y.problem(node, path, `expected at most ${max} variables, got ${entries.size}`);
    return null;
  }
  const env: Record<string, string> = {};
  let ok = true;
  for (const [key, entry] of entries) {
    if (!new RegExp(ENV_NAME).test(key)) {
      y.problem(entry.keyNode, [...path, key], `is not a valid variable name: ${ENV_NAME_HINT}`);
      ok = false;
      continue;
    }
    if (key === RESERVED_NAME || key === JOB_ID_VARIABLE) {
      y.problem(entry.keyNode, [...path, key], key === RESERVED_NAME ? RESERVED_HINT : JOB_ID_HINT);
      ok = false;
      continue;
    }
    const value = y.text(entry.node, [...path, key], {
      maxLength: StepSchema.properties.env.additionalProperties.maxLength,
      what: 'a string (write an empty value as "")',
      givenToPrograms: true,
    });
    if (value === null) ok = false;
    else env[key] = value;
  }
  return ok ? env : null;
}

function readSecretNames(y: YamlReader, node: YamlNode | null): string[] | null {
  const props = DefinitionSchema.properties.secretsKeys;
  const items = y.list(node, ['secrets'], { max: props.maxItems });
  if (!items) return null;
  const names: string[] = [];
  const seen = new Set<string>();
  let ok = true;
  items.forEach((item, i) => {
    const name = y.text(item, ['secrets', i], {
      minLength: 1,
      maxLength: props.items.maxLength,
      pattern: ENV_NAME,
      patternHint: `a secret name becomes an environment variable of the steps, so it ${ENV_NAME_HINT}`,
      what: 'the name of a secret from secrets.yaml',
    });
    if (name === null) ok = false;
    else if (name === RESERVED_NAME || name === JOB_ID_VARIABLE) {
      y.problem(item, ['secrets', i], name === RESERVED_NAME ? RESERVED_HINT : JOB_ID_HINT);
      ok = false;
    } else if (seen.has(name)) {
      y.problem(item, ['secrets', i], `\`${name}\` is listed twice`);
      ok = false;
    } else {
      seen.add(name);
      names.push(name);
    }
  });
  return ok ? names : null;
}

function readParams(y: YamlReader, node: YamlNode | null): ParamDefinition[] | null {
  const items = y.list(node, ['params'], { max: DefinitionSchema.properties.paramsSchema.maxItems });
  if (!items) return null;
  const params: ParamDefinition[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const param = readParam(y, item, ['params', i]);
    if (param) params.push(param);
    else ok = false;
  });
  return ok ? params : null;
}

/**
 * The coordinator's own rules (shared/src/params.ts): keywords per type, patterns, enum options,
 * bounds, default, names that would set the same environment variable.
 */
function paramsAreValid(y: YamlReader, params: ParamDefinition[], patterns: PatternSet): boolean {
  const problems = paramsSchemaProblems(params, 'params', patterns);
  for (const problem of problems) {
    const path = problem.path.split('.').map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    const at = y.doc.getIn(path, true) as YamlNode | undefined;
    const fallback = y.doc.getIn(path.slice(0, 2), true) as YamlNode | undefined;
    y.problem(at ?? fallback ?? null, path, problem.message);
  }
  return problems.length === 0;
}

function readParam(y: YamlReader, node: YamlNode | null, path: YamlPath): ParamDefinition | null {
  const before = y.problems.length;
  const entries = y.map(node, path, PARAM_KEYS);
  if (!entries) return null;
  const props = ParamSchema.properties;
  const field = (key: string) => entries.get(key)?.node ?? null;
  const param: Partial<ParamDefinition> = {};
  if (!entries.has('name')) y.problem(node, path, 'missing `name`');
  else {
    const name = y.text(field('name'), [...path, 'name'], {
      minLength: 1,
      maxLength: props.name.maxLength,
      pattern: props.name.pattern,
      patternHint: 'must start with a letter or `_` and contain only letters, digits, `_`, `.` and `-`',
    });
    if (name !== null) param.name = name;
  }
  if (!entries.has('type')) y.problem(node, path, `missing \`type\`: one of ${PARAM_TYPES.join(', ')}`);
  else {
    const type = y.text(field('type'), [...path, 'type']);
    if (type !== null && !(PARAM_TYPES as readonly string[]).includes(type))
      y.problem(field('type'), [...path, 'type'], `expected one of ${PARAM_TYPES.join(', ')}, got \`${type}\``);
    else if (type !== null) param.type = type as ParamType;
  }
  if (entries.has('required')) {
    const required = y.boolean(field('required'), [...path, 'required']);
    if (required !== null) param.required = required;
  }
  if (entries.has('default')) {
    // A string or enum default written as a plain number (`default: 1.10`) is the text as written.
    const textual = param.type === 'string' || param.type === 'enum';
    const value = textual
      ? y.text(field('default'), [...path, 'default'], { givenToPrograms: true }) // DROVER_PARAM_<NAME>
      : y.scalar(field('default'), [...path, 'default'], 'a string, a number or true/false');
    if (value !== null) param.default = value;
  }
  if (entries.has('pattern')) {
    const pattern = y.strictString(
      field('pattern'),
      [...path, 'pattern'],
      "a regular expression; quote it: '^v[0-9]+$'",
    );
    if (pattern !== null && pattern.length > props.pattern.maxLength)
      y.problem(field('pattern'), [...path, 'pattern'], `must be at most ${props.pattern.maxLength} characters long`);
    else if (pattern !== null) param.pattern = pattern;
  }
  if (entries.has('options')) {
    const items = y.list(field('options'), [...path, 'options'], { max: props.options.maxItems });
    if (items) {
      const options = items.map((item, i) =>
        y.text(item, [...path, 'options', i], { maxLength: props.options.items.maxLength }),
      );
      if (options.every((o): o is string => o !== null)) param.options = options;
    }
  }
  for (const bound of ['min', 'max'] as const) {
    if (!entries.has(bound)) continue;
    const value = y.number(field(bound), [...path, bound]);
    if (value !== null) param[bound] = value;
  }
  if (entries.has('description')) {
    const description = y.text(field('description'), [...path, 'description'], {
      maxLength: props.description.maxLength,
    });
    if (description !== null) param.description = description;
  }
  return y.problems.length === before ? (param as ParamDefinition) : null;
}

/** A duration (duration.ts) of at most `maxMs` (default: the 24 hours of any timeout). */
function readDuration(y: YamlReader, node: YamlNode | null, path: YamlPath, maxMs?: number): number | null {
  const resolved = y.resolve(node);
  if (!isScalar(resolved)) {
    y.problem(node, path, `expected ${DURATION_EXPECTED}, got ${y.kind(resolved)}`);
    return null;
  }
  const parsed = parseDuration(resolved.value);
  if ('problem' in parsed) {
    y.problem(node, path, parsed.problem);
    return null;
  }
  if (maxMs !== undefined && parsed.ms > maxMs) {
    y.problem(node, path, `must be at most ${formatDuration(maxMs)}, got \`${String(resolved.value)}\``);
    return null;
  }
  return parsed.ms;
}

/** `description:` with nothing after it: the same as leaving the key out. */
function isNull(y: YamlReader, node: YamlNode | null): boolean {
  const resolved = y.resolve(node);
  return resolved === null || (isScalar(resolved) && resolved.value === null);
}
