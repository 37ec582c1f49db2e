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
