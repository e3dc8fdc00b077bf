/**
 * An id as people read it: `…e3f40516`, its last 8 characters, enough to tell ids of one kind
 * apart (and to pass a job's to `--job`). Not its first ones: jobs, batches, agents and device
 * bindings have time-ordered ids (UUIDv7), whose first 8 characters are their creation time, the
 * same for every one made in the same minute.
 */
export function shortId(id: string): string {
  return id.length > 8 ? `…${id.slice(-8)}` : id;
}
