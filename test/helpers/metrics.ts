import {
  getMetricsFromIterator,
  type PromData,
  type PromHistogramData,
  type PromMetric,
  type PromMetrics,
} from 'prom2javascript';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { fetch } from 'undici';

/**
 * A scrape of a `/metrics` endpoint, parsed by a Prometheus text-format parser (prom2javascript,
 * not the code under test), with lookups by series name and labels.
 */
export class Scrape {
  private constructor(
    readonly text: string,
    private readonly metrics: PromMetrics,
  ) {}

  static async parse(text: string): Promise<Scrape> {
    // prom-client writes NaN as `Nan` (the event-loop lag gauges between two scrapes with no sample
    // in between), which Prometheus reads as NaN and this parser refuses: those samples are left out.
    const lines = text.split('\n').filter((line) => !/^\w+(\{.*\})? Nan$/i.test(line));
    return new Scrape(text, await getMetricsFromIterator(lines[Symbol.iterator]()));
  }

  has(name: string): boolean {
    return name in this.metrics;
  }

  family(name: string): PromMetric {
    const family = this.metrics[name];
    if (!family) throw new Error(`no series ${name} in the scrape`);
    return family;
  }

  /** The samples of `name` whose labels include `labels`. */
  samples(name: string, labels: Record<string, string> = {}): (PromData | PromHistogramData)[] {
    return (this.family(name).data as (PromData | PromHistogramData)[]).filter((m) =>
      Object.entries(labels).every(([k, v]) => m.labels[k] === v),
    );
  }

  /** The sum of the values (counters, gauges) of `name`'s samples whose labels include `labels`. */
  value(name: string, labels: Record<string, string> = {}): number {
    if (this.family(name).type === 'histogram') throw new Error(`${name} is a histogram`);
    return (this.samples(name, labels) as PromData[]).reduce((sum, m) => sum + m.value, 0);
  }

  /** A histogram's count and sum over its samples whose labels include `labels`. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
    if (this.family(name).type !== 'histogram') throw new Error(`${name} is not a histogram`);
    const samples = this.samples(name, labels) as PromHistogramData[];
    return {
      count: samples.reduce((n, m) => n + m.count, 0),
      sum: samples.reduce((n, m) => n + (m.sum ?? 0), 0),
    };
  }
}

export interface ScrapeAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** `GET <url>` with an optional bearer token, the answer as is. */
export async function getMetrics(url: string, token?: string): Promise<ScrapeAnswer> {
  const res = await fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers as unknown as Headers, text: await res.text() };
}

/** Scrapes `url` (which must answer 200 in the Prometheus text format) and parses it. */
export async function scrape(url: string, token?: string): Promise<Scrape> {
  const res = await getMetrics(url, token);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${res.text}`);
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain') || !type.includes('version=0.0.4'))
    throw new Error(`GET ${url}: not the Prometheus text format (${type})`);
  return Scrape.parse(res.text);
}

/** Prometheus's own checker (Debian's `prometheus` package), when installed. */
export const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((file) => fs.existsSync(file));

/** `promtool check metrics` on `text`: its exit code and what it said. */
export function promtoolCheck(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(PROMTOOL!, ['check', 'metrics'], (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
    child.stdin!.end(text);
  });
}
