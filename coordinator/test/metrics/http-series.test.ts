import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpSeries } from '../../src/metrics/http-series.js';

describe('HttpSeries', () => {
  it("counts answers per route, method and status, and times them in prom-client's histogram format", async () => {
    const series = new HttpSeries(
      { requests: 'x_requests_total', duration: 'x_duration_seconds' },
      { requests: 'Requests', duration: 'Durations' },
      [0.01, 0.1],
    );
    const registry = new Registry();
    for (const metric of series.metrics()) registry.registerMetric(metric);
    series.observe('/v1/jobs/:id', 'GET', 200, 0.005);
    series.observe('/v1/jobs/:id', 'GET', 200, 0.01);
    series.observe('/v1/jobs/:id', 'GET', 404, 0.05);
    series.observe('/v1/jobs/:id', 'GET', 200, 3);
    series.observe('unmatched', 'POST', 404, 0.001);
    expect(await registry.metrics()).toBe(
      [
        '# HELP x_requests_total Requests',
        '# TYPE x_requests_total counter',
        'x_requests_total{route="/v1/jobs/:id",method="GET",status="200"} 3',
        'x_requests_total{route="/v1/jobs/:id",method="GET",status="404"} 1',
        'x_requests_total{route="unmatched",method="POST",status="404"} 1',
        '',
        '# HELP x_duration_seconds Durations',
        '# TYPE x_duration_seconds histogram',
        'x_duration_seconds_bucket{route="/v1/jobs/:id",method="GET",le="0.01"} 2',
        'x_duration_seconds_bucket{route="/v1/jobs/:id",method="GET",le="0.1"} 3',
        'x_duration_seconds_bucket{route="/v1/jobs/:id",method="GET",le="+Inf"} 4',
        'x_duration_seconds_sum{route="/v1/jobs/:id",method="GET"} 3.065',
        'x_duration_seconds_count{route="/v1/jobs/:id",method="GET"} 4',
        'x_duration_seconds_bucket{route="unmatched",method="POST",le="0.01"} 1',
        'x_duration_seconds_bucket{route="unmatched",method="POST",le="0.1"} 1',
        'x_duration_seconds_bucket{route="unmatched",method="POST",le="+Inf"} 1',
        'x_duration_seconds_sum{route="unmatched",method="POST"} 0.001',
        'x_duration_seconds_count{route="unmatched",method="POST"} 1',
        '',
      ].join('\n'),
    );
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('x_requests_total{');
  });
});
