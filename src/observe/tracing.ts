import { AsyncLocalStorage } from 'node:async_hooks';
import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { Context, Span, SpanKind, Tracer } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/sdk-trace';
import { redactSecrets } from '../core/secrets.js';

// The one place spans are made. Tracing is on when the standard OpenTelemetry environment names an
// OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); only then are
// the @opentelemetry packages imported, on the first span. Off, `withSpan` runs its function with a
// span that does nothing: no import, no context, no allocation beyond the call itself.
//
// Every string attribute goes through `redactSecrets` here, so no key reaches a collector whichever
// span set it; prompt and completion text are set only when the user opts in with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (see `messageContent`).

/** An attribute value; undefined ones are left out. */
export type SpanValue = string | number | boolean | readonly string[] | undefined;
export type SpanAttributes = Readonly<Record<string, SpanValue>>;

/** What the code inside a span may tell it. */
export interface TraceSpan {
  /** Adds attributes (strings redacted). */
  set(attributes: SpanAttributes): void;
  /** Marks the span failed: `error.type` is the error's code (or its class), the status its message. */
  fail(error: unknown): void;
  /** The span's W3C `traceparent`, to continue the trace in another process; undefined when off. */
  traceparent(): string | undefined;
}

export interface SpanOptions {
  /** `client` for a request to a model, `server` for a request served; @default internal */
  kind?: 'client' | 'server' | 'internal';
  /**
   * A W3C `traceparent` to parent the span under when this code runs in no span of this process: how a
   * run continued by another process (a worker, `workflow resume`) stays in the trace it started in.
   */
  parent?: string | undefined;
}

const NOOP: TraceSpan = {
  set: () => undefined,
  fail: () => undefined,
  traceparent: () => undefined,
};

interface Runtime {
  readonly tracer: Tracer;
  readonly provider: TracerProvider;
  readonly api: typeof OpenTelemetryApi;
  readonly endpoint: string;
}

let enabled: boolean | undefined;
let runtime: Promise<Runtime | undefined> | undefined;
let loaded: Runtime | undefined;
/** The span code runs in; made with the SDK, so a process that does not trace never tracks contexts. */
let storage: AsyncLocalStorage<Context> | undefined;

/** Whether spans are exported: an OTLP endpoint is set and the SDK is not turned off. */
export function tracingEnabled(): boolean {
  if (enabled === undefined) {
    const env = process.env;
    const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    enabled =
      endpoint !== undefined &&
      endpoint !== '' &&
      env['OTEL_SDK_DISABLED'] !== 'true' &&
      env['OTEL_TRACES_EXPORTER'] !== 'none';
  }
  return enabled;
}

/**
 * Runs `run` inside a span named `name`: its child spans (any `withSpan` it awaits) are parented
 * under it; it ends when `run` settles, failed when `run` throws.
 */
export function withSpan<T>(
  name: string,
  attributes: SpanAttributes,
  run: (span: TraceSpan) => Promise<T>,
  options: SpanOptions = {},
): Promise<T> {
  if (!tracingEnabled()) return run(NOOP);
  return inSpan(name, attributes, run, options);
}

async function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  run: (span: TraceSpan) => Promise<T>,
  options: SpanOptions,
): Promise<T> {
  const otel = loaded ?? (await load());
  if (otel === undefined) return run(NOOP);
  const { api, tracer } = otel;
  const current = (storage ??= new AsyncLocalStorage<Context>());
  const parent = current.getStore() ?? parentContext(api, options.parent) ?? api.ROOT_CONTEXT;
  const span = tracer.startSpan(
    redactSecrets(name),
    { kind: spanKind(api, options.kind), attributes: clean(attributes) },
    parent,
  );
  const handle = spanHandle(api, span);
  try {
    return await current.run(api.trace.setSpan(parent, span), () => run(handle));
  } catch (error) {
    handle.fail(error);
    throw error;
  } finally {
    span.end();
  }
}

/** Whether the user asked for prompt and completion text in spans (the GenAI conventions' flag). */
export function capturesMessageContent(): boolean {
  return tracingEnabled() && process.env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT'] === 'true';
}

/**
 * `gen_ai.input.messages` / `gen_ai.output.messages` as the GenAI conventions shape them (JSON of
 * role and text parts), or nothing when content capture is off. Redacted like every attribute.
 */
export function messageContent(
  attribute: 'gen_ai.input.messages' | 'gen_ai.output.messages' | 'gen_ai.system_instructions',
  role: 'user' | 'assistant' | 'system',
  text: string | undefined,
): SpanAttributes {
  if (text === undefined || !capturesMessageContent()) return {};
  const content = redactSecrets(text);
  const value =
    attribute === 'gen_ai.system_instructions'
      ? [{ type: 'text', content }]
      : [{ role, parts: [{ type: 'text', content }] }];
  return { [attribute]: JSON.stringify(value) };
}

/**
 * Sends the spans still held, within `timeoutMs`. A collector that is down or slow costs the command
 * at most that long and one line on stderr; it never changes the command's outcome. Returns false when
 * the spans could not be sent in time (the caller may then end the process: the exporter's request
 * would otherwise keep it alive).
 */
export async function flushTracing(timeoutMs = 2_500): Promise<boolean> {
  if (runtime === undefined) return true;
  const otel = await runtime;
  if (otel === undefined) return true;
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    otel.provider.forceFlush().then(
      () => 'sent',
      (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/^Error: /, ''),
    ),
    new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer in ${timeoutMs} ms`), timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  if (outcome === 'sent') return true;
  process.stderr.write(
    redactSecrets(`switchboard: warning: traces not sent to ${otel.endpoint} (${outcome})\n`),
  );
  return false;
}

/** Test seam: forget the environment read and the SDK set up, as a fresh process would. */
export function resetTracing(): void {
  enabled = undefined;
  runtime = undefined;
  loaded = undefined;
}

function load(): Promise<Runtime | undefined> {
  runtime ??= setUp().then(
    (otel) => (loaded = otel),
    (error: unknown) => {
      enabled = false;
      process.stderr.write(
        `switchboard: warning: tracing is off, the OpenTelemetry packages did not load (${error instanceof Error ? error.message : String(error)})\n`,
      );
      return undefined;
    },
  );
  return runtime;
}

async function setUp(): Promise<Runtime> {
  const [
    api,
    { TracerProvider, BatchSpanProcessor },
    { detectResources, envDetector, resourceFromAttributes },
    { OTLPTraceExporter },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const env = process.env;
  // The exporter reads the endpoint and OTEL_EXPORTER_OTLP_HEADERS itself; the headers never reach a span.
  const exporter = new OTLPTraceExporter({ timeoutMillis: 2_000 });
  const provider = new TracerProvider({
    // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over Switchboard's own name.
    resource: resourceFromAttributes({ 'service.name': 'switchboard' }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        exportTimeoutMillis: 2_000,
        // The SDK's standard setting, which this version no longer reads itself.
        ...scheduleDelay(env['OTEL_BSP_SCHEDULE_DELAY']),
      }),
    ],
  });
  const traces = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];
  const endpoint =
    traces !== undefined && traces !== ''
      ? traces
      : `${(env['OTEL_EXPORTER_OTLP_ENDPOINT'] ?? '').replace(/\/$/, '')}/v1/traces`;
  return { api, provider, tracer: provider.getTracer('switchboard'), endpoint };
}

/** `OTEL_BSP_SCHEDULE_DELAY`: milliseconds between exports (@default 5000); nothing for a bad value. */
function scheduleDelay(value: string | undefined): { scheduledDelayMillis?: number } {
  const milliseconds = value === undefined || value === '' ? Number.NaN : Number(value);
  return Number.isFinite(milliseconds) && milliseconds >= 0 ? { scheduledDelayMillis: milliseconds } : {};
}

function spanHandle(api: Runtime['api'], span: Span): TraceSpan {
  return {
    set: (attributes) => span.setAttributes(clean(attributes)),
    fail: (error) => {
      const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as {
        code?: unknown;
        message?: unknown;
      };
      const type = typeof code === 'string' ? code : error instanceof Error ? error.name : '_OTHER';
      span.setAttribute('error.type', type);
      span.setStatus({
        code: api.SpanStatusCode.ERROR,
        message: redactSecrets(typeof message === 'string' ? message : String(error)),
      });
    },
    traceparent: () => traceparentOf(span),
  };
}

function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function parentContext(api: Runtime['api'], traceparent: string | undefined): Context | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
  });
}

function spanKind(api: Runtime['api'], kind: SpanOptions['kind']): SpanKind {
  if (kind === 'client') return api.SpanKind.CLIENT;
  if (kind === 'server') return api.SpanKind.SERVER;
  return api.SpanKind.INTERNAL;
}

/** The attributes with undefined ones left out and every string redacted. */
function clean(attributes: SpanAttributes): Record<string, string | number | boolean | string[]> {
  const cleaned: Record<string, string | number | boolean | string[]> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    if (typeof value === 'string') cleaned[key] = redactSecrets(value);
    else if (Array.isArray(value)) cleaned[key] = (value as readonly string[]).map(redactSecrets);
    else cleaned[key] = value as number | boolean;
  }
  return cleaned;
}

/**
 * `gen_ai.provider.name` of a Switchboard provider (the conventions' well-known values): Claude Code
 * and the Anthropic API are `anthropic`, Gemini `gcp.gemini`; others keep their own name.
 */
export function genAiProviderName(provider: string): string {
  if (provider === 'claude' || provider === 'anthropic') return 'anthropic';
  if (provider === 'gemini') return 'gcp.gemini';
  return provider;
}
