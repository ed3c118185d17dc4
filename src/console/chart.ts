// A stacked bar chart over time (uPlot). Each group is drawn as the running total up to it, the
// largest total first, so the opaque bars stack; the legend and the table beside it carry the numbers.

import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries { label: string; values: number[]; color: string }

/** Colours with at least 3:1 contrast on white, told apart by people with common colour blindness (Okabe–Ito). */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#8a6d00', '#56B4E9', '#E69F00', '#5b3f8f', '#a33', '#2f6f4f'];

/** The i-th colour: the palette, then hues a golden angle apart, dark enough for 3:1 on white; never a repeat. */
export const colorAt = (i: number): string =>
  i < PALETTE.length ? PALETTE[i]! : `hsl(${Math.round(((i - PALETTE.length) * 137.508 + 20) % 360)} 75% 32%)`;

const AXIS_FONT = '12px sans-serif';
let measure: CanvasRenderingContext2D | null = null;
/** Room for the widest tick label, so `$150,000.00` is not cut to `150,000.00`. */
function labelsWidth(values: string[] | null): number {
  measure ??= document.createElement('canvas').getContext('2d');
  if (!measure || !values) return 60;
  measure.font = AXIS_FONT;
  return Math.ceil(Math.max(0, ...values.map((v) => measure!.measureText(v).width))) + 24;
}

export function StackedBars({ buckets, series, format, formatBucket, label }: {
  /** Bucket starts, ISO dates. */
  buckets: string[];
  series: ChartSeries[];
  format: (v: number) => string;
  /** A bucket's tick label. */
  formatBucket: (iso: string) => string;
  label: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || buckets.length === 0) return;
    const xs = buckets.map((b) => Date.parse(`${b.slice(0, 10)}T00:00:00Z`) / 1000);
    const running: number[][] = [];
    series.forEach((s, i) => running.push(s.values.map((v, j) => v + (i > 0 ? running[i - 1]![j]! : 0))));
    const order = series.map((_, i) => i).reverse();
    const step = xs.length > 1 ? xs[1]! - xs[0]! : 86_400;
    const plot = new uPlot({
      width: Math.max(280, el.clientWidth),
      height: 280,
      legend: { show: false },
      cursor: { show: false },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: {
        // Half a bucket of room at each end, so the first and last bars are whole.
        x: { time: true, range: (_u, min, max) => [min - step / 2, max + step / 2] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        {
          // A tick on each bucket; labels on every k-th when they would not fit side by side.
          stroke: '#333', font: AXIS_FONT, grid: { show: false }, splits: () => xs,
          values: (u, ticks) => {
            const every = Math.max(1, Math.ceil((ticks.length * 96) / Math.max(1, u.width - 100)));
            return ticks.map((_t, i) => (i % every === 0 ? formatBucket(buckets[i]!) : ''));
          },
        },
        {
          stroke: '#333', font: AXIS_FONT, size: (_u, values) => labelsWidth(values),
          values: (_u, ticks) => ticks.map((t) => format(t)), grid: { stroke: '#e4e4e4' },
        },
      ],
      series: [
        {},
        ...order.map((i) => ({
          label: series[i]!.label,
          fill: series[i]!.color,
          stroke: series[i]!.color,
          width: 0,
          paths: uPlot.paths.bars!({ size: [0.7, 64], align: 0 }),
          points: { show: false },
        })),
      ],
    }, [xs, ...order.map((i) => running[i]!)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 280 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, series]);
  return html`<figure class="chart">
    <div ref=${box} class="chart-canvas" aria-hidden="true"></div>
    <figcaption>
      <span class="sr-only">${label}: the numbers are in the table below.</span>
      <ul class="legend">${series.map((s) => html`<li><span class="swatch" style=${{ background: s.color }}></span>${s.label}</li>`)}</ul>
    </figcaption>
  </figure>`;
}
