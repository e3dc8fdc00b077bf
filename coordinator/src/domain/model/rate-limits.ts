/** Job limits of an API token or a workflow: at most this many runs per window (null: no limit). */
export interface RateLimits {
  perMinute: number | null;
  perHour: number | null;
  perDay: number | null;
}
