import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local OTLP/HTTP trace receiver, what a collector (Jaeger, the OpenTelemetry Collector) is to the
// exporter: it accepts POST /v1/traces, keeps the raw bytes (to search for secrets) and decodes the
// OTLP JSON into spans with plain attributes.

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  service: unknown;
  /** The resource's attributes (`service.name`, OTEL_RESOURCE_ATTRIBUTES'). */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for it. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every request body, as received. */
  readonly bodies: Buffer[];
  readonly headers: IncomingHttpHeaders[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

interface OtlpRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        kind: number;
        status?: { code?: number; message?: string };
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
}

function plain(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plain(value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      bodies.push(body);
      headers.push(request.headers);
      if (!String(request.headers['content-type']).startsWith('application/json')) {
        response.writeHead(415).end();
        return;
      }
      const decoded = JSON.parse(body.toString('utf8')) as OtlpRequest;
      for (const resource of decoded.resourceSpans ?? []) {
        const resourceAttributes = attributesOf(resource.resource?.attributes);
        const service = resourceAttributes['service.name'];
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              name: span.name,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId === '' ? undefined : span.parentSpanId,
              kind: span.kind,
              status: span.status ?? {},
              attributes: attributesOf(span.attributes),
              service,
              resource: resourceAttributes,
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    headers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
