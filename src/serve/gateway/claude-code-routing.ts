import type { GatewayRouteClass, GatewaySettings } from '../../core/gateway-settings.js';

// Claude Code's requests sorted into claude-code-router's classes (v1.0.49 src/utils/router.ts), so
// `gateway.routes` can send each class to a model of its own. Pure: the handler reads the body once
// and records the class and reason beside the call.

/** A Claude Code request's class; `default` is every request no routed class claims. */
export type RequestClass = GatewayRouteClass | 'default';

export interface RequestClassification {
  requestClass: RequestClass;
  /** One short line for logs and the ledger: `thinking is set`, `estimated 71,204 input tokens > 60,000`. */
  reason: string;
  /** The content of a `<CCR-SUBAGENT-MODEL>` tag, when there was one with content. */
  subagentModel?: string;
}

export interface RoutedRequest {
  /** The name to resolve (`resolveGatewayModel`): a route's target, a subagent tag's, or the requested model. */
  model: string;
  requestClass: RequestClass;
  reason: string;
  /** Whether `model` differs from the requested one. */
  rerouted: boolean;
}

const SUBAGENT_OPEN = '<CCR-SUBAGENT-MODEL>';
const SUBAGENT_CLOSE = '</CCR-SUBAGENT-MODEL>';

/**
 * The class of an Anthropic Messages body, tested in claude-code-router's order:
 * 1. `long_context`: the input estimate (see `estimateInputTokens`) exceeds `longContextTokens`;
 * 2. `subagent`: `system` carries `<CCR-SUBAGENT-MODEL>name</CCR-SUBAGENT-MODEL>` (the name is the target);
 * 3. `background`: the model is a Haiku model (Claude Code's titles, summaries, quota checks);
 * 4. `think`: `thinking` is set and not `{ type: 'disabled' }`;
 * 5. `web_search`: a tool's `type` starts with `web_search` (the server tool);
 * 6. otherwise `default`.
 * As in claude-code-router, a class counts only when `settings.routes` has a target for it (a
 * subagent tag with content is its own target), so a long request that thinks still goes to `think`
 * when only `think` is routed.
 */
export function classifyRequest(
  body: Record<string, unknown>,
  settings: GatewaySettings,
): RequestClassification {
  return classify(body, settings, typeof body['model'] === 'string' ? body['model'] : '');
}

/** The model a request should resolve: its class's route when there is one, else the requested model. */
export function routeRequest(
  requested: string,
  body: Record<string, unknown>,
  settings: GatewaySettings,
): RoutedRequest {
  const { requestClass, reason, subagentModel } = classify(body, settings, requested);
  const target = requestClass === 'default' ? undefined : (subagentModel ?? settings.routes[requestClass]);
  const model = target ?? requested;
  return { model, requestClass, reason, rerouted: model !== requested };
}

function classify(
  body: Record<string, unknown>,
  settings: GatewaySettings,
  model: string,
): RequestClassification {
  const { routes } = settings;
  if (routes.long_context !== undefined) {
    const tokens = estimateInputTokens(body);
    if (tokens > settings.longContextTokens) {
      return {
        requestClass: 'long_context',
        reason: `estimated ${count(tokens)} input tokens > ${count(settings.longContextTokens)}`,
      };
    }
  }
  const subagentModel = subagentTag(body['system']);
  if (subagentModel !== undefined && (subagentModel !== '' || routes.subagent !== undefined)) {
    return subagentModel === ''
      ? { requestClass: 'subagent', reason: 'the system prompt has an empty subagent tag' }
      : {
          requestClass: 'subagent',
          reason: `the system prompt's subagent tag names ${clip(subagentModel)}`,
          subagentModel,
        };
  }
  if (routes.background !== undefined && /haiku/i.test(model)) {
    return { requestClass: 'background', reason: `${clip(model)} is a Haiku model` };
  }
  if (routes.think !== undefined && thinkingOn(body['thinking'])) {
    return { requestClass: 'think', reason: 'thinking is set' };
  }
  const webSearch = routes.web_search === undefined ? undefined : webSearchTool(body['tools']);
  if (webSearch !== undefined) {
    return { requestClass: 'web_search', reason: `the request has a ${clip(webSearch)} tool` };
  }
  const routed = Object.keys(routes);
  return {
    requestClass: 'default',
    reason: routed.length === 0 ? 'no class is routed' : `no routed class applies (${routed.join(', ')})`,
  };
}

/**
 * Input tokens of a Messages body, estimated as a quarter of the length of the JSON of its `system`,
 * `messages` and `tools` (the rule of thumb for English and code; a tokenizer would cost more than
 * the routing decision is worth). The length is summed while walking the values, so a 1 MB body
 * allocates no string. Base64 media (`{ type: 'base64', data }`: images, PDFs) is left out, since it
 * is billed by pixels or pages, not by its characters.
 */
export function estimateInputTokens(body: Record<string, unknown>): number {
  return Math.ceil(jsonLength([body['system'], body['messages'], body['tools']]) / 4);
}

/** The length `JSON.stringify` would give, near enough (escapes counted as one character), without building it. */
function jsonLength(root: unknown): number {
  let length = 0;
  const pending: unknown[] = [root];
  const seen = new WeakSet<object>();
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') length += value.length + 2;
    else if (typeof value === 'number' || typeof value === 'boolean') length += String(value).length;
    else if (value === null) length += 4;
    else if (typeof value === 'object' && !seen.has(value)) {
      seen.add(value);
      if (Array.isArray(value)) {
        length += 1 + Math.max(value.length, 1);
        for (const item of value) pending.push(item);
      } else {
        const entries = Object.entries(value);
        length += 1 + Math.max(entries.length, 1);
        const media = (value as { type?: unknown }).type === 'base64';
        for (const [key, item] of entries) {
          length += key.length + 3;
          if (!(media && key === 'data')) pending.push(item);
        }
      }
    }
  }
  return length;
}

/** The trimmed content of the first `<CCR-SUBAGENT-MODEL>` tag in `system` (a string or text blocks). */
function subagentTag(system: unknown): string | undefined {
  const texts =
    typeof system === 'string'
      ? [system]
      : Array.isArray(system)
        ? system.map((block: unknown) =>
            isRecord(block) && typeof block['text'] === 'string' ? block['text'] : '',
          )
        : [];
  for (const text of texts) {
    // indexOf, not a regex: an unclosed tag repeated through a 1 MB prompt stays linear.
    const open = text.indexOf(SUBAGENT_OPEN);
    if (open === -1) continue;
    const start = open + SUBAGENT_OPEN.length;
    const close = text.indexOf(SUBAGENT_CLOSE, start);
    if (close !== -1) return text.slice(start, close).trim();
  }
  return undefined;
}

function thinkingOn(thinking: unknown): boolean {
  if (thinking === undefined || thinking === null || thinking === false) return false;
  return !(isRecord(thinking) && thinking['type'] === 'disabled');
}

/** The type of the first server web-search tool (`web_search_20250305`). */
function webSearchTool(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  for (const tool of tools) {
    if (isRecord(tool) && typeof tool['type'] === 'string' && tool['type'].startsWith('web_search')) {
      return tool['type'];
    }
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: number): string {
  return value.toLocaleString('en-US');
}

/** A client's text in a reason, kept to one short line. */
function clip(text: string): string {
  const line = text.slice(0, 81).replace(/\s+/g, ' ');
  return line.length <= 80 ? line : `${line.slice(0, 79)}…`;
}
