import { describeValue, type ValidationDetail } from '../errors.js';

/**
 * Free-form JSON that the coordinator stores and later compares, hashes and serves (trigger-run
 * `params`, a job's `output`) must be plain: nested at most MAX_JSON_DEPTH levels (serializing
 * and comparing it recurse), numbers finite (JSON such as `1e400` parses to Infinity).
 */

export const MAX_JSON_DEPTH = 32;

/** Why `value` cannot be stored as plain JSON (too deep, a non-finite number), or null. */
export function plainJsonProblem(value: unknown, depth: number): string | null {
  if (typeof value === 'number')
    return Number.isFinite(value) ? null : `must be a finite number, got ${describeValue(value)}`;
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_JSON_DEPTH) return `is nested more than ${MAX_JSON_DEPTH} levels deep`;
  const items = Array.isArray(value) ? value : Object.values(value);
  for (const item of items) {
    const problem = plainJsonProblem(item, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/**
 * One detail per top-level string of run params holding a NUL character: a step gets each as an
 * environment variable (`DROVER_PARAM_<NAME>`), which cannot hold one, so the job could only fail.
 */
export function envValueProblems(record: Record<string, unknown>, path: string): ValidationDetail[] {
  return Object.keys(record)
    .filter((key) => typeof record[key] === 'string' && record[key].includes('\u0000'))
    .map((key) => ({
      path: `${path}.${key}`,
      message: "must not contain a NUL character (U+0000): a step's environment variable cannot hold one",
    }));
}

/** One detail per top-level entry of `record` that is not plain JSON, at `<path>.<key>`. */
export function plainJsonProblems(record: Record<string, unknown>, path: string): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  for (const key of Object.keys(record)) {
    const problem = plainJsonProblem(record[key], 1);
    if (problem) problems.push({ path: `${path}.${key}`, message: problem });
  }
  return problems;
}
