import { labelKeyProblem, parseLabelPairs, type Labels } from '@drover/shared';
import { CliError } from '../errors.js';

/** What `drover agent label` is asked to do to the operators' labels of an agent. */
export interface LabelChanges {
  /** `key=value` items: the labels to set. */
  set: Record<string, string>;
  /** `key-` items: the keys to remove. */
  remove: string[];
  /** `--clear`: start from no operator label at all. */
  clear: boolean;
}

/**
 * The changes of `drover agent label <agent> [key=value ...] [key- ...] [--clear]`, in the style
 * of `kubectl label`, checked by the shared label rules before any request: a bad key or value,
 * an item that is neither form, a key set to two values or both set and removed are errors
 * naming the item.
 */
export function parseLabelChanges(items: readonly string[], clear: boolean): LabelChanges {
  const setItems: string[] = [];
  const remove: string[] = [];
  for (const item of items) {
    if (item.includes('=')) {
      setItems.push(item);
    } else if (item.endsWith('-') && item.length > 1) {
      const key = item.slice(0, -1);
      const problem = labelKeyProblem(key);
      if (problem) throw new CliError(problem);
      if (!remove.includes(key)) remove.push(key);
    } else {
      throw new CliError(
        `${JSON.stringify(item)} is not a label change: expected key=value to set a label, or key- to remove one`,
      );
    }
  }
  let set: Record<string, string>;
  try {
    set = parseLabelPairs(setItems);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
  const both = remove.find((key) => Object.hasOwn(set, key));
  if (both !== undefined) throw new CliError(`the label ${both} is both set and removed`);
  if (clear && remove.length > 0) {
    throw new CliError(
      `--clear removes every operator label already: leave out ${remove.map((k) => `${k}-`).join(' ')}`,
    );
  }
  return { set, remove, clear };
}

/** Whether `changes` ask for anything: without, the command only shows the labels. */
export const changesAnything = (changes: LabelChanges): boolean =>
  changes.clear || changes.remove.length > 0 || Object.keys(changes.set).length > 0;

/** The operators' labels after `changes`, from `current` (the agent's `operatorLabels`). */
export function applyLabelChanges(current: Labels, changes: LabelChanges): Record<string, string> {
  const next: Record<string, string> = changes.clear ? {} : { ...current };
  for (const key of changes.remove) delete next[key];
  return { ...next, ...changes.set };
}
