import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { OUTCOMES, OUTCOME_WORDS, type HourBucket } from '../api/overview';

const HEIGHT = 200;
/** Whole jobs only on the count axis. */
const COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000];

/** Whether the system asks for a dark theme, following it as it changes. */
export function usePrefersDark(): boolean {
  const query = '(prefers-color-scheme: dark)';
  const [dark, setDark] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const media = window.matchMedia(query);
    const change = () => setDark(media.matches);
    media.addEventListener('change', change);
    return () => media.removeEventListener('change', change);
  }, []);
  return dark;
}

/**
 * The stacked bars of each outcome, drawn as uPlot series of running sums: the sum of every
 * outcome first (the top of the stack, in the last outcome's colour), each next series one outcome
 * less on top of it, so that each bar shows its outcomes stacked, the first at the bottom.
 */
function chartData(buckets: readonly HourBucket[]): uPlot.AlignedData {
  const xs = buckets.map((b) => Date.parse(b.start) / 1000);
  const sums = OUTCOMES.map((_, k) => buckets.map((b) => OUTCOMES.slice(0, k + 1).reduce((n, o) => n + b[o], 0)));
  return [xs, ...sums.reverse()];
}

/** The page's colours (styles.css: light or dark with the system), which the canvas cannot read itself. */
function colours(): { axis: string; grid: string; outcome: (o: string) => string } {
  const css = getComputedStyle(document.documentElement);
  const get = (name: string) => css.getPropertyValue(name).trim();
  return { axis: get('--chart-axis'), grid: get('--chart-grid'), outcome: (o) => get(`--chart-${o}`) };
}

function options(width: number): uPlot.Options {
  const c = colours();
  const bars = uPlot.paths.bars!({ size: [0.8, 40] });
  const axis = { stroke: c.axis, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 } };
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max, 4)] } },
    axes: [axis, { ...axis, incrs: COUNT_STEPS, size: 44 }],
    series: [
      {},
      ...[...OUTCOMES].reverse().map((o) => ({
        label: OUTCOME_WORDS[o],
        stroke: c.outcome(o),
        fill: c.outcome(o),
        width: 0,
        paths: bars,
        points: { show: false },
      })),
    ],
  };
}

/**
 * The jobs of each hour by outcome as stacked bars (uPlot, on a canvas). The canvas says nothing to
 * a screen reader: `summary` names the chart for it, and the page gives the same counts as a
 * table. Drawn again when the system's theme changes; resized with its box.
 */
export function JobsChart({ buckets, summary }: { buckets: readonly HourBucket[]; summary: string }) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const dark = usePrefersDark();

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const plot = new uPlot(options(el.clientWidth), chartData(buckets), el);
    chart.current = plot;
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
      chart.current = null;
    };
    // Made anew for a new theme only: the buckets' changes are set on it below.
  }, [dark]);

  useEffect(() => {
    chart.current?.setData(chartData(buckets));
  }, [buckets]);

  return <div ref={box} className="jobs-chart" role="img" aria-label={summary} />;
}
