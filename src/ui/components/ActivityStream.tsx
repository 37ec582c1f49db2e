// What a step or agent run did, one line per event: model turns, tool calls and results, scripts,
// validators, gates and git effects. Every value is rendered as text.

import type { ReactNode } from 'react';
import { formatClock, formatDuration, formatJson, formatMoney, formatTokens } from '../format.js';

export interface ActivityItem {
  id: string;
  at: string;
  type: string;
  /** An agent event's own message. */
  message?: string;
  data?: unknown;
}

type Data = Record<string, unknown>;

const text = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : undefined;
const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function isWebUrl(url: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** A link only for an http(s) URL: anything else (javascript:, data:) stays text. */
export function SafeLink({ url, children }: { url: string | undefined; children?: ReactNode }) {
  if (url === undefined) return null;
  const safe = isWebUrl(url);
  if (!safe) return <span>{children ?? url}</span>;
  return (
    <a href={url} target="_blank" rel="noreferrer noopener">
      {children ?? url}
    </a>
  );
}

function Block({ label, value }: { label?: string; value: unknown }) {
  const content = value === undefined || value === '' ? undefined : formatJson(value);
  if (content === undefined) return null;
  return (
    <div className="activity-block">
      {label !== undefined && <div className="activity-block-label">{label}</div>}
      <pre>{content}</pre>
    </div>
  );
}

function Chips({ values }: { values: Array<string | undefined | false> }) {
  return (
    <span className="chips">
      {values
        .filter((value): value is string => typeof value === 'string' && value !== '')
        .map((value) => (
          <span key={value} className="chip">
            {value}
          </span>
        ))}
    </span>
  );
}

/** The body of one event, by type. */
function ActivityBody({ type, data }: { type: string; data: Data }) {
  switch (type) {
    case 'model-turn': {
      const tokensIn = num(data['inputTokens']);
      const tokensOut = num(data['outputTokens']);
      return (
        <Chips
          values={[
            text(data['model']),
            `${formatTokens(tokensIn)} in / ${formatTokens(tokensOut)} out`,
            num(data['cacheReadTokens']) ? `${formatTokens(num(data['cacheReadTokens']))} cached` : undefined,
            num(data['costUsd']) !== undefined && formatMoney(num(data['costUsd'])),
            num(data['durationMs']) !== undefined && formatDuration(num(data['durationMs'])),
            num(data['failedAttempts']) ? `${num(data['failedAttempts'])} failed attempts` : undefined,
          ]}
        />
      );
    }
    case 'tool-call':
      return (
        <>
          <Chips values={[text(data['tool']), text(data['parent']) && `subagent ${text(data['parent'])}`]} />
          <Block label="arguments" value={data['input']} />
        </>
      );
    case 'tool-result':
      return (
        <>
          <Chips
            values={[
              text(data['tool']),
              data['error'] === true ? 'error' : undefined,
              num(data['durationMs']) !== undefined && formatDuration(num(data['durationMs'])),
            ]}
          />
          <Block value={data['result']} />
        </>
      );
    case 'script-output':
      return (
        <>
          <Chips
            values={[
              `exit ${text(data['exitCode']) ?? '—'}`,
              text(data['signal']),
              num(data['durationMs']) !== undefined && formatDuration(num(data['durationMs'])),
            ]}
          />
          <Block label="stdout" value={data['stdout']} />
          <Block label="stderr" value={data['stderr']} />
        </>
      );
    case 'git-commit':
    case 'git-push':
    case 'git-adopted':
    case 'git-reset':
      return (
        <Chips
          values={[
            text(data['branch']),
            text(data['commit'])?.slice(0, 12),
            text(data['base']) && `base ${text(data['base'])}`,
          ]}
        />
      );
    case 'pull-request':
      return (
        <span className="chips">
          <SafeLink url={text(data['url'])}>{`PR #${text(data['number']) ?? '?'}`}</SafeLink>
          {data['opened'] === true && <span className="chip">opened</span>}
        </span>
      );
    case 'gate-presented':
      return <Block value={data['prompt']} />;
    case 'gate-answer':
    case 'gate-taken':
      return (
        <Chips
          values={[
            text(data['choice']),
            text(data['answeredBy']) && `by ${text(data['answeredBy'])}`,
            text(data['outcome']),
          ]}
        />
      );
    case 'parse-recovery':
      return (
        <>
          <Chips
            values={[text(data['provider']), text(data['reasks']) && `${text(data['reasks'])} re-asks`]}
          />
          <Block label="errors" value={data['errors']} />
        </>
      );
    case 'validator-start':
      return <Chips values={[text(data['model'])]} />;
    case 'validator-end':
      return (
        <>
          <Chips
            values={[
              data['passed'] === true ? 'passed' : 'not passed',
              data['errored'] === true ? 'errored' : undefined,
              num(data['costUsd']) !== undefined && formatMoney(num(data['costUsd'])),
            ]}
          />
          <Block label="issues" value={data['issues']} />
          <Block label="error" value={data['error']} />
        </>
      );
    case 'step-start':
      return (
        <Chips
          values={[
            text(data['type']),
            text(data['attempt']) && `attempt ${text(data['attempt'])}`,
            text(data['itemKey']),
          ]}
        />
      );
    case 'step-end':
    case 'group-end':
    case 'run-end':
      return (
        <>
          <Chips
            values={[
              text(data['status']),
              text(data['next']) && `→ ${text(data['next'])}`,
              num(data['costUsd']) !== undefined && formatMoney(num(data['costUsd'])),
            ]}
          />
          {text(data['error']) !== undefined && (
            <ErrorText code={text(data['errorCode'])} message={text(data['error'])} />
          )}
        </>
      );
    default: {
      const keys = Object.keys(data);
      return keys.length === 0 ? null : <Block value={data} />;
    }
  }
}

export function ErrorText({
  code,
  message,
  hint,
}: {
  code?: string | undefined;
  message?: string | undefined;
  hint?: string | undefined;
}) {
  return (
    <div className="error-text" role="alert">
      {code !== undefined && <span className="error-code">{code}</span>} {message}
      {hint !== undefined && <div className="error-hint">{hint}</div>}
    </div>
  );
}

export function ActivityStream({
  items,
  empty = 'No activity yet.',
}: {
  items: readonly ActivityItem[];
  empty?: string;
}) {
  if (items.length === 0) return <p className="muted">{empty}</p>;
  return (
    <ol className="activity">
      {items.map((item) => {
        const data = item.data !== null && typeof item.data === 'object' ? (item.data as Data) : {};
        return (
          <li key={item.id} className={`activity-item kind-${item.type.split('-')[0] ?? item.type}`}>
            <div className="activity-head">
              <time dateTime={item.at}>{formatClock(item.at)}</time>
              <span className="activity-type">{item.type}</span>
              {item.message !== undefined && <span className="activity-message">{item.message}</span>}
            </div>
            <ActivityBody type={item.type} data={data} />
            {item.data !== undefined && (item.data === null || typeof item.data !== 'object') && (
              <Block value={item.data} />
            )}
          </li>
        );
      })}
    </ol>
  );
}
