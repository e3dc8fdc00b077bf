/** How long after its first connect the daemon gives back what starting it took. */
export const RELEASE_DELAY_MS = 5000;

/**
 * One memory-reducing garbage collection, once the daemon has started and connected: V8 keeps the
 * pages that starting used (reading the options, the enrollment, the workflow files, the first
 * requests) until something makes it reduce its heap, which an idle daemon never does by itself;
 * this takes its idle RSS down by ~4 MiB (docs/performance.md, "Agent footprint"). `gc` exists in
 * the single executable, which starts with `--expose-gc`; elsewhere (the built JavaScript, tests)
 * this does nothing.
 */
export function releaseStartupMemory(): void {
  const gc = (globalThis as { gc?: (options: object) => unknown }).gc;
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
