// Routing: decisions, abstain rate, tier mix, decisions per day, low-confidence decisions, feedback.

import type { RoutingReport } from '../../serve/ui/api-types.js';
import { DecisionsChart, TierMixChart } from '../charts/RoutingCharts.js';
import { TableCard } from '../components/DataTable.js';
import { RangeReport, Stat } from '../components/RangeReport.js';
import { formatCount, formatPercent, formatTime } from '../format.js';

function LowConfidenceTable({ report }: { report: RoutingReport }) {
  return (
    <TableCard
      title={<>Low confidence (below {formatPercent(report.lowConfidenceBelow)})</>}
      empty={report.lowConfidence.length === 0 ? 'None in this range.' : undefined}
      columns={['Time', 'Skill', { num: 'Confidence' }, 'Method', 'Request']}
    >
      {report.lowConfidence.map((decision) => (
        <tr key={decision.id}>
          <td>{formatTime(decision.at)}</td>
          <td className="mono">{decision.skill}</td>
          <td className="num">{formatPercent(decision.confidence)}</td>
          <td>{decision.method}</td>
          <td className="wrap">{decision.text ?? <span className="muted">(text not stored)</span>}</td>
        </tr>
      ))}
    </TableCard>
  );
}

function FeedbackTable({ feedback }: { feedback: RoutingReport['feedback'] }) {
  return (
    <TableCard
      title="Feedback"
      empty={feedback.length === 0 ? 'No corrections recorded.' : undefined}
      columns={['Time', 'Decision', 'Chosen', 'Corrected to']}
    >
      {feedback.map((row) => (
        <tr key={`${row.decisionId}:${row.at}`}>
          <td>{formatTime(row.at)}</td>
          <td className="mono">{row.decisionId}</td>
          <td className="mono">{row.chosen ?? '—'}</td>
          <td className="mono">{row.corrected}</td>
        </tr>
      ))}
    </TableCard>
  );
}

export function RoutingPage() {
  return (
    <RangeReport<RoutingReport> title="Routing" path="/routing">
      {(data) => (
        <>
          <div className="stats">
            <Stat value={formatCount(data.decisions)} label="decisions" />
            <Stat value={formatPercent(data.abstainRate)} label="abstained" />
            {data.bySkill.slice(0, 3).map((skill) => (
              <Stat key={skill.skill} value={formatCount(skill.decisions)} label={skill.skill} mono />
            ))}
          </div>
          <div className="grid-2 wide-right">
            <section className="card">
              <h2>Tier mix</h2>
              <TierMixChart tierMix={data.tierMix} />
            </section>
            <section className="card">
              <h2>Decisions per day by method</h2>
              <DecisionsChart byDay={data.byDay} />
            </section>
          </div>
          <LowConfidenceTable report={data} />
          <FeedbackTable feedback={data.feedback} />
        </>
      )}
    </RangeReport>
  );
}
