// Spend per day, stacked by provider.

import { useCallback } from 'react';
import type { ChartConfiguration } from 'chart.js';
import type { CostReport } from '../../serve/ui/api-types.js';
import { formatMoney } from '../format.js';
import { ChartCanvas, seriesColors, themeColor } from './ChartCanvas.js';

export function CostChart({ byDay }: { byDay: CostReport['byDay'] }) {
  const config = useCallback((): ChartConfiguration => {
    const providers = [...new Set(byDay.flatMap((day) => Object.keys(day.byProvider)))].sort();
    const colors = seriesColors(providers.length);
    const grid = themeColor('--border');
    const text = themeColor('--text-muted');
    return {
      type: 'bar',
      data: {
        labels: byDay.map((day) => day.day),
        datasets: providers.map((provider, index) => ({
          label: provider,
          data: byDay.map((day) => day.byProvider[provider] ?? 0),
          backgroundColor: colors[index] ?? '#888',
          stack: 'spend',
        })),
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          legend: { labels: { color: text } },
          tooltip: {
            callbacks: { label: (item) => `${item.dataset.label ?? ''}: ${formatMoney(Number(item.raw))}` },
          },
        },
        scales: {
          x: { stacked: true, ticks: { color: text }, grid: { color: grid } },
          y: {
            stacked: true,
            ticks: { color: text, callback: (value) => formatMoney(Number(value)) },
            grid: { color: grid },
          },
        },
      },
    };
  }, [byDay]);
  return <ChartCanvas config={config} label="Spend per day by provider" />;
}
