// Routing: decisions, abstain rate, tier mix, decisions per day, low-confidence decisions, feedback.

import type { RoutingReport } from '../../serve/ui/api-types.js';
import { DecisionsChart, TierMixChart } from '../charts/RoutingCharts.js';
import { RangeReport, Stat } from '../components/RangeReport.js';
import { formatCount, formatPercent, formatTime } from '../format.js';

function LowConfidenceTable({ report }: { report: RoutingReport }) {
  return (
    <section className="card">
      <h2>Low confidence (below {formatPercent(report.lowConfidenceBelow)})</h2>
      {report.lowConfidence.length === 0 ? (
        <p className="muted">None in this range.</p>
      ) : (
        <div className="table-wrap">
          <table className="data-table compact">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Skill</th>
                <th scope="col" className="num">
                  Confidence
                </th>
                <th scope="col">Method</th>
                <th scope="col">Request</th>
              </tr>
            </thead>
            <tbody>
              {report.lowConfidence.map((decision) => (
                <tr key={decision.id}>
                  <td>{formatTime(decision.at)}</td>
                  <td className="mono">{decision.skill}</td>
                  <td className="num">{formatPercent(decision.confidence)}</td>
                  <td>{decision.method}</td>
                  <td className="wrap">
                    {decision.text ?? <span className="muted">(text not stored)</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function FeedbackTable({ feedback }: { feedback: RoutingReport['feedback'] }) {
  return (
    <section className="card">
      <h2>Feedback</h2>
      {feedback.length === 0 ? (
        <p className="muted">No corrections recorded.</p>
      ) : (
        <div className="table-wrap">
          <table className="data-table compact">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Decision</th>
                <th scope="col">Chosen</th>
                <th scope="col">Corrected to</th>
              </tr>
            </thead>
            <tbody>
              {feedback.map((row) => (
                <tr key={`${row.decisionId}:${row.at}`}>
                  <td>{formatTime(row.at)}</td>
                  <td className="mono">{row.decisionId}</td>
                  <td className="mono">{row.chosen ?? '—'}</td>
                  <td className="mono">{row.corrected}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
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
