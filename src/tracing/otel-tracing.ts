import type { Link, SpanKind as OtelSpanKind, SpanContext } from '@opentelemetry/api'
import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace'
import type { TracingConfig } from '../config/config.ts'
import type { Logger } from '../shared/logger.ts'
import { formatTraceparent, parseTraceparent } from './traceparent.ts'
import type { Span, SpanKind, Tracing } from './tracing.ts'

// How long a shutdown waits for the last spans to reach the receiver.
const SHUTDOWN_EXPORT_TIMEOUT_MS = 5000

// Tracing as configured: the OpenTelemetry SDK, loaded here and only here, exporting over OTLP/HTTP
// (JSON) in batches. Nothing is registered globally and nothing is patched: spans are started
// through the returned Tracing, each with its parent given, by the code that passes it on.
export async function createTracing(config: TracingConfig, logger: Logger): Promise<Tracing> {
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
    ])
  const ratio = () => new sdk.TraceIdRatioBasedSampler(config.ratio)
  const samplers: Record<TracingConfig['sampler'], () => Sampler> = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: () => new sdk.ParentBasedSampler({ root: ratio() }),
  }
  const exporter = reportingFailures(new OTLPTraceExporter({ url: config.url }), logger)
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      [ATTR_SERVICE_NAME]: config.serviceName,
    }),
    sampler: samplers[config.sampler](),
    spanProcessors: [
      new sdk.BatchSpanProcessor({ exporter, exportTimeoutMillis: SHUTDOWN_EXPORT_TIMEOUT_MS }),
    ],
  })
  const tracer = provider.getTracer('plant-store')
  const kinds: Record<SpanKind, OtelSpanKind> = {
    server: api.SpanKind.SERVER,
    client: api.SpanKind.CLIENT,
    producer: api.SpanKind.PRODUCER,
    internal: api.SpanKind.INTERNAL,
  }
  const contextOf = (traceparent: string | undefined): SpanContext | undefined => {
    const fields = parseTraceparent(traceparent)
    return fields && { ...fields, isRemote: true }
  }
  return {
    startSpan: (name, { kind = 'internal', parent, links = [], attributes } = {}): Span => {
      const parentContext = contextOf(parent)
      const context = parentContext
        ? api.trace.setSpanContext(api.ROOT_CONTEXT, parentContext)
        : api.ROOT_CONTEXT
      const linked = links.flatMap((link): Link[] => {
        const linkContext = contextOf(link)
        return linkContext ? [{ context: linkContext }] : []
      })
      const span = tracer.startSpan(name, { kind: kinds[kind], links: linked, attributes }, context)
      return {
        traceparent: formatTraceparent(span.spanContext()),
        end: ({ name, attributes, error } = {}) => {
          if (name !== undefined) span.updateName(name)
          if (attributes) span.setAttributes(attributes)
          if (error !== undefined) {
            const message = error instanceof Error ? error.message : String(error)
            span.setStatus({ code: api.SpanStatusCode.ERROR, message })
          }
          span.end()
        },
      }
    },
    shutdown: () => provider.shutdown(),
  }
}

// The exporter, saying in the log when spans could not be sent (once until they can again): the
// SDK reports that only through its global diagnostic logger, which the service does not register.
function reportingFailures(exporter: SpanExporter, logger: Logger): SpanExporter {
  let failing = false
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== 0 && !failing) logger.warn({ err: result.error }, 'spans could not be exported')
        if (result.code === 0 && failing) logger.info('spans are exported again')
        failing = result.code !== 0
        done(result)
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  }
}
