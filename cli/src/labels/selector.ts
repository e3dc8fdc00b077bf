import { parseSelector, SelectorError, type Requirement } from '@drover/shared';
import { ApiError, CliError } from '../errors.js';
import { caretUnder } from '../output/caret.js';
import { once } from '../params.js';

/** The 0-based position a selector error names: `... at position N: ...`. */
const POSITION = /\bat position (\d+):/;

/** A selector refused at `position`: `message`, then the selector with a caret under the spot. */
function refused(message: string, selector: string, position: number | null): CliError {
  const caret = position === null ? null : caretUnder(selector, position);
  return new CliError(caret === null ? message : `${message}\n${caret.replace(/\n$/, '')}`);
}

/**
 * The coordinator's 422 for `selector` (its detail at `at`: `querystring.selector`) as the error to
 * print: the API's message, with a caret under the position it names; any other error unchanged.
 */
export function selectorRefusal(error: unknown, selector: string, at = 'querystring.selector'): unknown {
  if (!(error instanceof ApiError) || error.status !== 422) return error;
  const details = (error.body as { details?: unknown } | null)?.details;
  const detail = (Array.isArray(details) ? (details as unknown[]) : []).find(
    (d): d is { path: string; message: string } =>
      typeof d === 'object' &&
      d !== null &&
      (d as { path?: unknown }).path === at &&
      typeof (d as { message?: unknown }).message === 'string',
  );
  if (detail === undefined) return error;
  const position = POSITION.exec(detail.message)?.[1];
  return refused(error.message, selector, position === undefined ? null : Number(position));
}

/**
 * The requirements of a selector given to `--selector` (or the argument `what` names), parsed by
 * the shared rules before any request: one that does not parse is an error naming the option and
 * the position, with a caret under it.
 */
export function parseSelectorOption(selector: string, what = '--selector'): Requirement[] {
  try {
    return parseSelector(selector);
  } catch (error) {
    if (!(error instanceof SelectorError)) throw error;
    throw refused(`${what}: not a label selector: ${error.message}`, selector, error.position);
  }
}

/**
 * commander's parser of `--selector`: given twice, refused rather than the last kept (a second
 * `--selector` reads as more requirements, and would bind, list or run on other agents).
 */
export const oneSelector = once(
  '--selector',
  "give one, its requirements joined with commas (e.g. 'role=gateway,site=berlin')",
);
