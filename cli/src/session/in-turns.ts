import { ApiError, CliError } from '../errors.js';
import type { Runtime } from '../runtime.js';

/** Calls made at the same time by a command that changes many things (devices, agents) one call each. */
export const AT_ONCE = 8;

/** `work` on each of `items`, `AT_ONCE` at a time, their results in the order of the items. */
export async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += AT_ONCE) {
    results.push(...(await Promise.all(items.slice(i, i + AT_ONCE).map(work))));
  }
  return results;
}

/**
 * `change` made to each of `items`, `AT_ONCE` at a time; a refusal ends the command with the
 * coordinator's words for the refused item (named by `name`), after saying on standard error which
 * items were changed (`done`: "removed on firmware") and which were left as they were.
 */
export async function changeInTurns<T, R>(
  rt: Runtime,
  items: readonly T[],
  name: (item: T) => string,
  done: string,
  change: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += AT_ONCE) {
    const turn = items.slice(i, i + AT_ONCE);
    const settled = await Promise.allSettled(turn.map(change));
    const refused = settled.findIndex((s) => s.status === 'rejected');
    if (refused === -1) {
      for (const s of settled) results.push((s as PromiseFulfilledResult<R>).value);
      continue;
    }
    const names = (list: readonly T[]) => list.map(name).join(', ');
    const changed = [...items.slice(0, i), ...turn.filter((_, j) => settled[j]!.status === 'fulfilled')];
    const left = items.filter((item) => !changed.includes(item) && item !== turn[refused]);
    if (changed.length > 0) rt.err(`drover: ${done}: ${names(changed)}\n`);
    if (left.length > 0) rt.err(`drover: left as they were: ${names(left)}\n`);
    const reason = (settled[refused] as PromiseRejectedResult).reason as unknown;
    if (reason instanceof ApiError) {
      throw new CliError(`${name(turn[refused]!)}: ${reason.message}`, reason.exitCode, { cause: reason });
    }
    throw reason;
  }
  return results;
}
