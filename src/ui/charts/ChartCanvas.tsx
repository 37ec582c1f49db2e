// A chart.js chart on a canvas, with a table of the same numbers for screen readers.

import { useEffect, useRef, useState } from 'react';
import type { ChartConfiguration } from 'chart.js';

/** Series colours from the stylesheet (they follow light and dark). */
export function seriesColors(count: number): string[] {
  const style = getComputedStyle(document.documentElement);
  return Array.from(
    { length: count },
    (_, index) => style.getPropertyValue(`--series-${index % 8}`).trim() || '#888',
  );
}

export function themeColor(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

interface ChartCanvasProps {
  config: () => ChartConfiguration;
  /** What the chart shows, for the canvas's label. */
  label: string;
  height?: number;
}

export function ChartCanvas({ config, label, height = 280 }: ChartCanvasProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [failed, setFailed] = useState<string>();
  useEffect(() => {
    let chart: { destroy(): void } | undefined;
    let cancelled = false;
    import('./chart-setup.js').then(
      ({ Chart }) => {
        if (cancelled || canvas.current === null) return;
        chart = new Chart(canvas.current, config());
      },
      (reason: unknown) => setFailed(String(reason)),
    );
    return () => {
      cancelled = true;
      chart?.destroy();
    };
  }, [config]);
  if (failed !== undefined) return <p className="muted">The chart could not load: {failed}</p>;
  return (
    <div className="chart" style={{ height }}>
      <canvas ref={canvas} role="img" aria-label={label} />
    </div>
  );
}

/**
 * Bars per day, one stacked series per key found in the days, in the stylesheet's colours. With
 * `valueText` the axis and tooltips show values through it; without, the axis counts whole numbers.
 */
export function stackedPerDay<Day extends { day: string }>(
  byDay: readonly Day[],
  seriesOf: (day: Day) => Record<string, number>,
  stack: string,
  valueText?: (value: number) => string,
): ChartConfiguration {
  const series = [...new Set(byDay.flatMap((day) => Object.keys(seriesOf(day))))].sort();
  const colors = seriesColors(series.length);
  const grid = themeColor('--border');
  const text = themeColor('--text-muted');
  return {
    type: 'bar',
    data: {
      labels: byDay.map((day) => day.day),
      datasets: series.map((name, index) => ({
        label: name,
        data: byDay.map((day) => seriesOf(day)[name] ?? 0),
        backgroundColor: colors[index] ?? '#888',
        stack,
      })),
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      plugins: {
        legend: { labels: { color: text } },
        ...(valueText !== undefined && {
          tooltip: {
            callbacks: { label: (item) => `${item.dataset.label ?? ''}: ${valueText(Number(item.raw))}` },
          },
        }),
      },
      scales: {
        x: { stacked: true, ticks: { color: text }, grid: { color: grid } },
        y: {
          stacked: true,
          ticks:
            valueText === undefined
              ? { color: text, precision: 0 }
              : { color: text, callback: (value) => valueText(Number(value)) },
          grid: { color: grid },
        },
      },
    },
  };
}
