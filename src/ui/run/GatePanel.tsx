// A parked gate's options as buttons (a `prompt_for` option asks for its text first), or a questions
// step's form. Answers go to POST /ui/api/runs/:id/gate.

import { useState, type FormEvent } from 'react';
import type { ActionResult, GateAnswerBody } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import type { PendingGate } from '../types.js';
import { ApiError, postJson } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';
import { formatTime } from '../format.js';
import { Markdown } from '../components/Markdown.js';

interface GatePanelProps {
  runId: string;
  gate: PendingGate;
  onAnswered: (result: ActionResult) => void;
}

function useAnswer(runId: string, onAnswered: (result: ActionResult) => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const send = async (body: GateAnswerBody) => {
    setBusy(true);
    setError(undefined);
    try {
      onAnswered(await postJson<ActionResult>(`/runs/${idSegment(runId)}/gate`, body));
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, send };
}

/** What a gate's form needs: the gate, whether an answer is on its way, and how to send one. */
interface GateFormProps {
  gate: PendingGate;
  busy: boolean;
  send: (body: GateAnswerBody) => void;
}

function QuestionsForm({ gate, busy, send }: GateFormProps) {
  const questions = gate.questions ?? [];
  const [answers, setAnswers] = useState<Record<string, string>>(() =>
    Object.fromEntries(questions.map((question) => [question.id, question.default ?? ''])),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send({ step: gate.step, choice: 'answer', answers });
  };
  return (
    <form onSubmit={submit} className="questions">
      {questions.map((question) => (
        <label key={question.id} className="field">
          <span>
            {question.text}
            {question.required && <span aria-hidden="true"> *</span>}
          </span>
          {question.hint !== undefined && <small className="muted">{question.hint}</small>}
          {question.choices.length > 0 && !question.allowFreeText ? (
            <select
              required={question.required}
              value={answers[question.id] ?? ''}
              onChange={(event) => setAnswers({ ...answers, [question.id]: event.target.value })}
            >
              <option value="">—</option>
              {question.choices.map((choice) => (
                <option key={choice} value={choice}>
                  {choice}
                </option>
              ))}
            </select>
          ) : (
            <>
              <input
                type="text"
                required={question.required}
                list={`choices-${question.id}`}
                value={answers[question.id] ?? ''}
                onChange={(event) => setAnswers({ ...answers, [question.id]: event.target.value })}
              />
              <datalist id={`choices-${question.id}`}>
                {question.choices.map((choice) => (
                  <option key={choice} value={choice} />
                ))}
              </datalist>
            </>
          )}
        </label>
      ))}
      <div className="button-row">
        <button type="submit" className="primary" disabled={busy}>
          Answer
        </button>
        <button type="button" disabled={busy} onClick={() => send({ step: gate.step, choice: 'skip_all' })}>
          Skip all
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy}
          onClick={() => send({ step: gate.step, choice: 'abort' })}
        >
          Abort
        </button>
      </div>
    </form>
  );
}

function GateOptions({ gate, busy, send }: GateFormProps) {
  const [asking, setAsking] = useState<PendingGate['options'][number]>();
  const [text, setText] = useState('');
  if (asking !== undefined) {
    return (
      <form
        className="questions"
        onSubmit={(event) => {
          event.preventDefault();
          send({ step: gate.step, choice: asking.value, text });
        }}
      >
        <label className="field">
          <span>{asking.promptFor}</span>
          <textarea value={text} onChange={(event) => setText(event.target.value)} rows={3} autoFocus />
        </label>
        <div className="button-row">
          <button type="submit" className="primary" disabled={busy}>
            {asking.label}
          </button>
          <button type="button" onClick={() => setAsking(undefined)} disabled={busy}>
            Back
          </button>
        </div>
      </form>
    );
  }
  return (
    <div className="button-row">
      {gate.options.map((option, index) => (
        <button
          key={option.value}
          type="button"
          className={index === 0 ? 'primary' : ''}
          disabled={busy}
          onClick={() =>
            option.promptFor === undefined
              ? send({ step: gate.step, choice: option.value })
              : setAsking(option)
          }
        >
          {option.label}
          {option.promptFor !== undefined && '…'}
        </button>
      ))}
    </div>
  );
}

export function GatePanel({ runId, gate, onAnswered }: GatePanelProps) {
  const { busy, error, send } = useAnswer(runId, onAnswered);
  const isQuestions = gate.questions !== undefined && gate.questions.length > 0;
  return (
    <section className="gate-panel" aria-label={`Gate ${gate.step}`}>
      <h2>
        Waiting at <span className="mono">{gate.step}</span>
      </h2>
      {gate.prompt !== '' && <Markdown className="gate-prompt" text={gate.prompt} />}
      {gate.timesOutAt !== undefined && (
        <p className="muted">Takes its default at {formatTime(gate.timesOutAt)}.</p>
      )}
      {isQuestions ? (
        <QuestionsForm gate={gate} busy={busy} send={(body) => void send(body)} />
      ) : (
        <GateOptions gate={gate} busy={busy} send={(body) => void send(body)} />
      )}
      {error !== undefined && <ErrorText code={error.code} message={error.message} hint={error.hint} />}
    </section>
  );
}
