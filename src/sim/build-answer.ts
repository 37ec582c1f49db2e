import { randomBytes } from 'node:crypto';
import { conformingValue } from './conforming-value.js';
import type { SimRequestView } from './request.js';
import { requestedOutput } from './requested-output.js';
import type { ScenarioReply } from './scenario.js';
import { thinkingEnabled, type ThinkingSigner } from './thinking.js';
import type { SimAnswer } from './wire/answer.js';

interface ReplyContent {
  text: string;
  calls: { name: string; input: Record<string, unknown>; id?: string | undefined }[];
}

/** What the reply says, as scripted, or conforming to the schema the request carries (`conform`). */
function replyContent(
  reply: ScenarioReply,
  view: SimRequestView,
  body: Record<string, unknown>,
): ReplyContent {
  const output = reply.conform === true ? requestedOutput(view.wire, body) : undefined;
  if (output?.kind === 'tool') {
    const input = conformingValue(output.schema);
    const record = typeof input === 'object' && input !== null && !Array.isArray(input) ? input : {};
    return { text: '', calls: [{ name: output.name, input: record as Record<string, unknown> }] };
  }
  if (output?.kind === 'json') return { text: JSON.stringify(conformingValue(output.schema)), calls: [] };
  const scripted =
    reply.text ??
    (reply.json === undefined
      ? reply.conform === true && reply.echo !== true
        ? 'ok'
        : ''
      : JSON.stringify(reply.json));
  return {
    text: reply.echo === true ? `${scripted}${view.text}` : scripted,
    calls: [...(reply.tool === undefined ? [] : [reply.tool]), ...(reply.tools ?? [])],
  };
}

const randomId = (prefix: string): string => `${prefix}${randomBytes(8).toString('hex')}`;

/** The thinking of an answer to a request with thinking enabled whose reply scripts none. */
const DEFAULT_THINKING = 'Thinking it over before answering.';

export interface BuildAnswerOptions {
  reply: ScenarioReply;
  view: SimRequestView;
  /** The request body's length, from which the input token count is estimated. */
  requestBytes: number;
  body?: Record<string, unknown>;
  /** Signs `thinking` and issues `redactedThinking` data; without it those keys are left out. */
  signer?: ThinkingSigner;
}

/** A scripted reply as an answer any wire can format. */
export function buildAnswer({ reply, view, requestBytes, body = {}, signer }: BuildAnswerOptions): SimAnswer {
  const { text, calls } = replyContent(reply, view, body);
  // As the API does, a request with thinking enabled gets a thinking block first, scripted or not.
  const thought = reply.thinking ?? (thinkingEnabled(body) ? DEFAULT_THINKING : undefined);
  const thinking =
    thought === undefined || signer === undefined
      ? undefined
      : { text: thought, signature: signer.sign(thought) };
  const serverTool =
    reply.serverTool === undefined ? undefined : { id: randomId('srvtoolu_sim_'), ...reply.serverTool };
  const written = text.length + JSON.stringify(calls).length + (thought?.length ?? 0);
  return {
    id: randomId('sim_'),
    model: reply.model ?? view.model,
    text,
    toolCalls: calls.map((call) => ({
      id: call.id ?? randomId('toolu_sim_'),
      name: call.name,
      input: call.input,
    })),
    usage: {
      input: reply.usage?.input ?? Math.max(1, Math.ceil(requestBytes / 4)),
      output: reply.usage?.output ?? Math.max(1, Math.ceil(written / 4)),
      cacheRead: reply.usage?.cacheRead ?? 0,
      cacheWrite: reply.usage?.cacheWrite ?? 0,
    },
    stopReason: reply.stopReason,
    thinking,
    redactedThinking: reply.redactedThinking === true ? signer?.redactedData() : undefined,
    serverTool,
  };
}
