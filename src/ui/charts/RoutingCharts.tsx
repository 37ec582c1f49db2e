// The routing report's charts: the tier mix, and decisions per day by method.

import { useCallback } from 'react';
import type { ChartConfiguration } from 'chart.js';
import type { RoutingReport } from '../../serve/ui/api-types.js';
import { ChartCanvas, seriesColors, stackedPerDay, themeColor } from './ChartCanvas.js';

export function TierMixChart({ tierMix }: { tierMix: RoutingReport['tierMix'] }) {
  const config = useCallback((): ChartConfiguration => {
    const methods = Object.keys(tierMix);
    return {
      type: 'doughnut',
      data: {
        labels: methods,
        datasets: [
          {
            data: methods.map((method) => tierMix[method] ?? 0),
            backgroundColor: seriesColors(methods.length),
            borderColor: themeColor('--surface'),
          },
        ],
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        plugins: { legend: { position: 'right', labels: { color: themeColor('--text-muted') } } },
      },
    };
  }, [tierMix]);
  return <ChartCanvas config={config} label="Decisions by method" height={240} />;
}

export function DecisionsChart({ byDay }: { byDay: RoutingReport['byDay'] }) {
  const config = useCallback(() => stackedPerDay(byDay, (day) => day.byMethod, 'decisions'), [byDay]);
  return <ChartCanvas config={config} label="Routing decisions per day by method" />;
}
