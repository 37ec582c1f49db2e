// Spend per day, stacked by provider.

import { useCallback } from 'react';
import type { CostReport } from '../../serve/ui/api-types.js';
import { formatMoney } from '../format.js';
import { ChartCanvas, stackedPerDay } from './ChartCanvas.js';

export function CostChart({ byDay }: { byDay: CostReport['byDay'] }) {
  const config = useCallback(
    () => stackedPerDay(byDay, (day) => day.byProvider, 'spend', formatMoney),
    [byDay],
  );
  return <ChartCanvas config={config} label="Spend per day by provider" />;
}
