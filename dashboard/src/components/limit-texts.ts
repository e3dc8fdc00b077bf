/** A workflow's rate limits as the limits form shows and sends them. */

/** The largest limit the coordinator takes (`PATCH /orgs/:orgId/workflows/:workflowId`). */
export const MAX_LIMIT = 1_000_000_000;

/** Each window: its field in the API, its input's label. */
export const WINDOWS = [
  { field: 'rateLimitPerMinute', label: 'Runs a minute' },
  { field: 'rateLimitPerHour', label: 'Runs an hour' },
  { field: 'rateLimitPerDay', label: 'Runs a day' },
] as const;
export const FIELDS = WINDOWS.map((w) => w.field);

type LimitField = (typeof WINDOWS)[number]['field'];
type Texts = Record<LimitField, string>;
export type LimitsPatch = Partial<Record<LimitField, number | null>>;

/** The start of the inputs' ids: `limits-rateLimitPerMinute`. */
export const ID_PREFIX = 'limits';

/** The limits as the inputs show them: empty for no limit. */
export function textsOf(workflow: Record<LimitField, number | null>): Texts {
  const text = (n: number | null) => (n === null ? '' : String(n));
  return {
    rateLimitPerMinute: text(workflow.rateLimitPerMinute),
    rateLimitPerHour: text(workflow.rateLimitPerHour),
    rateLimitPerDay: text(workflow.rateLimitPerDay),
  };
}

/**
 * The change the inputs ask for: only the windows whose text differs from what the form opened
 * with (another owner's change to a window left alone here is kept), an empty input as null (no
 * limit), anything else as the number typed, for the coordinator to judge (`0`, `2.5`).
 */
export function limitsPatch(opened: Texts, typed: Texts): LimitsPatch {
  const patch: LimitsPatch = {};
  for (const field of FIELDS) {
    const text = typed[field].trim();
    if (text === opened[field]) continue;
    patch[field] = text === '' ? null : Number(text);
  }
  return patch;
}
