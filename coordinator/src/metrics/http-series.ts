import type { Metric } from 'prom-client';

/** A sample as prom-client's registry formats it (`metricName` for a histogram's `_bucket`, `_sum`, `_count`). */
interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** What prom-client's registry calls on a registered metric: `get()` at each scrape, `reset()`. */
interface RegistryMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: Sample[] }>;
  reset(): void;
}

/** One route and method: its answers per status, and the histogram of their durations. */
interface RouteMethod {
  readonly labels: { route: string; method: string };
  readonly statuses: Map<number, number>;
  /** Observations per bucket, not cumulative; the last one is `+Inf`. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

/**
 * `drover_http_requests_total` and `drover_http_request_duration_seconds`, counted on every HTTP
 * answer. prom-client's Counter and Histogram hash and validate their labels at each call (about
 * 3 µs per request here, ~2 % of a trigger run: the whole budget of the metrics); this keeps the
 * counts in plain maps instead (route, then method, then status: three lookups of strings whose
 * hashes V8 has cached) and hands them to prom-client's registry as two metrics it formats at
 * each scrape, like its own.
 */
export class HttpSeries {
  private readonly routes = new Map<string, Map<string, RouteMethod>>();

  constructor(
    private readonly names: { requests: string; duration: string },
    private readonly help: { requests: string; duration: string },
    private readonly upperBounds: readonly number[],
  ) {}

  observe(route: string, method: string, status: number, seconds: number): void {
    let methods = this.routes.get(route);
    if (!methods) {
      methods = new Map();
      this.routes.set(route, methods);
    }
    let entry = methods.get(method);
    if (!entry) {
      entry = {
        labels: { route, method },
        statuses: new Map(),
        buckets: new Array<number>(this.upperBounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      methods.set(method, entry);
    }
    entry.statuses.set(status, (entry.statuses.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < this.upperBounds.length && seconds > this.upperBounds[bucket]!) bucket += 1;
    entry.buckets[bucket]! += 1;
    entry.sum += seconds;
    entry.count += 1;
  }

  /**
   * The two metrics, for `registry.registerMetric`: prom-client types it as one of its own classes,
   * but calls only what `RegistryMetric` has.
   */
  metrics(): Metric[] {
    const metric = (name: string, help: string, type: RegistryMetric['type'], values: () => Sample[]) => {
      const m: RegistryMetric = {
        name,
        help,
        type,
        aggregator: 'sum',
        get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
        reset: () => this.routes.clear(),
      };
      return m as unknown as Metric;
    };
    return [
      metric(this.names.requests, this.help.requests, 'counter', () =>
        [...this.entries()].flatMap((e) =>
          [...e.statuses].map(([status, value]) => ({ value, labels: { ...e.labels, status: String(status) } })),
        ),
      ),
      metric(this.names.duration, this.help.duration, 'histogram', () =>
        [...this.entries()].flatMap((e) => this.histogramValues(e)),
      ),
    ];
  }

  private *entries(): Iterable<RouteMethod> {
    for (const methods of this.routes.values()) yield* methods.values();
  }

  private histogramValues(e: RouteMethod): Sample[] {
    const values: Sample[] = [];
    let cumulative = 0;
    this.upperBounds.forEach((le, i) => {
      cumulative += e.buckets[i]!;
      values.push({ metricName: `${this.names.duration}_bucket`, value: cumulative, labels: { ...e.labels, le } });
    });
    values.push({
      metricName: `${this.names.duration}_bucket`,
      value: e.count,
      labels: { ...e.labels, le: '+Inf' },
    });
    values.push({ metricName: `${this.names.duration}_sum`, value: e.sum, labels: e.labels });
    values.push({ metricName: `${this.names.duration}_count`, value: e.count, labels: e.labels });
    return values;
  }
}
