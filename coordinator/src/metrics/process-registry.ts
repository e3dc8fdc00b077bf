import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

/**
 * prom-client's default series (CPU, memory, heap, file descriptors, event-loop lag, GC,
 * `nodejs_version_info`): they describe the process, so one registry serves every coordinator a
 * process holds (tests and benchmarks start several), made on first use and kept for the life of
 * the process, as its event-loop monitor is.
 */
export function processRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}
