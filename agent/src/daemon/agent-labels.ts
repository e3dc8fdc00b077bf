import { BUILT_IN_LABELS, MAX_LABELS, parseLabelPairs, type Labels } from '@drover/shared';
import { AgentError } from '../errors.js';

/** The environment variable of the labels: `k=v` items separated by commas. */
export const LABELS_ENV = 'DROVER_AGENT_LABELS';

/** The labels a user may give, besides the built-in `os` and `arch` (so that the report stays within MAX_LABELS). */
export const MAX_USER_LABELS = MAX_LABELS - BUILT_IN_LABELS.length;

/** The labels every agent reports of itself: Node's `process.platform` and `process.arch`. */
export const builtInLabels = (platform: string = process.platform, arch: string = process.arch): Labels => ({
  os: platform,
  arch,
});

/**
 * The labels `drover-agent run` reports (docs/agent.md, "Labels"): the `--label k=v` items and the
 * `DROVER_AGENT_LABELS` ones merged, a flag winning over the variable for the same key, plus the
 * built-in `os` and `arch`. Throws a `bad_config` AgentError naming the item at the first problem:
 * a malformed item, a key or value past the rules, one key given twice with two values in the
 * same source, `os` or `arch` given by the user, more than MAX_USER_LABELS labels.
 */
export function loadAgentLabels(input: {
  /** The `--label` values, in order. */
  flags: readonly string[];
  /** `$DROVER_AGENT_LABELS`; empty items (a trailing comma) are ignored. */
  env?: string | undefined;
  platform?: string;
  arch?: string;
}): Record<string, string> {
  const builtIn = builtInLabels(input.platform, input.arch);
  const fromEnv = labelsOf(
    (input.env ?? '').split(',').filter((item) => item.trim() !== ''),
    (item) => `${LABELS_ENV} item "${item}"`,
    builtIn,
  );
  const fromFlags = labelsOf(input.flags, (item) => `--label "${item}"`, builtIn);
  const user = { ...fromEnv, ...fromFlags };
  const count = Object.keys(user).length;
  if (count > MAX_USER_LABELS) {
    throw new AgentError(
      'bad_config',
      `too many labels: ${count} from --label and ${LABELS_ENV}, at most ${MAX_USER_LABELS} ` +
        `(the agent adds ${BUILT_IN_LABELS.join(' and ')}, and a coordinator takes ${MAX_LABELS})`,
    );
  }
  return { ...user, ...builtIn };
}

/** One source's items as labels; `where(item)` names an item in a message, `builtIn` are the agent's own. */
function labelsOf(items: readonly string[], where: (item: string) => string, builtIn: Labels): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items) {
    let pair: Record<string, string>;
    try {
      pair = parseLabelPairs([item]);
    } catch (error) {
      throw new AgentError('bad_config', `${where(item)}: ${(error as Error).message}`);
    }
    const [key, value] = Object.entries(pair)[0]!;
    if ((BUILT_IN_LABELS as readonly string[]).includes(key)) {
      throw new AgentError(
        'bad_config',
        `${where(item)}: the agent sets the label ${key} itself (${key}=${builtIn[key]} here); remove it`,
      );
    }
    if (Object.hasOwn(labels, key) && labels[key] !== value) {
      throw new AgentError(
        'bad_config',
        `${where(item)}: the label ${key} is given twice (${key}=${labels[key]} before)`,
      );
    }
    labels[key] = value;
  }
  return labels;
}
