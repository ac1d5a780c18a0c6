import {
  type Attributes,
  type Context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { type IdGenerator, RandomIdGenerator, type SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { errorMessage } from '../core/errors.ts';
import {
  DEFAULT_SERVICE_NAME,
  type LegSpan,
  type LegTraceStart,
  type SpanAttributes,
  type TelemetryTracer,
} from './telemetry.ts';

export interface OtelTracerOptions {
  /** Where finished spans go: a BatchSpanProcessor over an OTLP exporter, or an in-memory one in tests. */
  readonly spanProcessors: readonly SpanProcessor[];
  readonly serviceName?: string | undefined;
}

/** The OpenTelemetry tracer, plus what a function calls before its invocation freezes. */
export interface OtelTracer extends TelemetryTracer {
  /** Exports every finished span; call it at the end of each invocation. */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Ids the leg span must carry: Baton chose them (the trace id is the turn's, the span id is the
 * one the leg journals and sends on). Set just before a synchronous startSpan, random otherwise.
 */
class PresetIdGenerator implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  preset: { traceId: string; spanId: string } | undefined;
  generateTraceId(): string {
    return this.preset?.traceId ?? this.#random.generateTraceId();
  }
  generateSpanId(): string {
    return this.preset?.spanId ?? this.#random.generateSpanId();
  }
}

/**
 * Baton's tracing on OpenTelemetry: one trace per session turn (the trace id the session was
 * given at intake), a span per leg whose id is the one the leg journals in its marker and carries
 * in its kicks' `traceparent`, so the next leg (a continuation or a recovery after a kill) parents
 * and links its span to it; GenAI `chat` and `execute_tool` spans inside each leg.
 * @example const tracer = createOtelTracer({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
 */
export function createOtelTracer(options: OtelTracerOptions): OtelTracer {
  const ids = new PresetIdGenerator();
  const provider = new TracerProvider({ idGenerator: ids, spanProcessors: [...options.spanProcessors] });
  const tracer = provider.getTracer(options.serviceName ?? DEFAULT_SERVICE_NAME);

  const startLegSpan = (leg: LegTraceStart): Span => {
    const flags = leg.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE;
    const previous = leg.previous && {
      traceId: leg.previous.traceId,
      spanId: leg.previous.spanId,
      traceFlags: flags,
      isRemote: true,
    };
    // A leg's parent is the previous leg of the turn; the first leg is the turn's root span.
    const parent: Context = previous ? trace.setSpanContext(ROOT_CONTEXT, previous) : ROOT_CONTEXT;
    const links: Link[] = previous ? [{ context: previous, attributes: { 'baton.link': 'previous-leg' } }] : [];
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': leg.agent,
      'baton.tenant': leg.tenant,
      'baton.session.id': leg.session,
      'baton.leg.epoch': leg.epoch,
      'baton.leg.reason': leg.reason,
      ...(leg.turn === undefined ? {} : { 'baton.turn.id': leg.turn }),
    };
    ids.preset = { traceId: leg.traceId, spanId: leg.spanId };
    try {
      return tracer.startSpan(`invoke_agent ${leg.agent}`, { kind: SpanKind.CONSUMER, attributes, links }, parent);
    } finally {
      ids.preset = undefined;
    }
  };

  return {
    annotateLeg: () => {},
    span: (name, fn) => inSpan(tracer.startSpan(name), fn),
    startLeg(leg): LegSpan {
      const legSpan = startLegSpan(leg);
      const context = trace.setSpan(ROOT_CONTEXT, legSpan);
      return {
        span: (name, attributes, fn) => {
          const kind = attributes['gen_ai.operation.name'] === 'chat' ? SpanKind.CLIENT : SpanKind.INTERNAL;
          const span = tracer.startSpan(name, { kind, attributes }, context);
          return inSpan(span, () => fn({ setAttributes: (more: SpanAttributes) => span.setAttributes(more) }));
        },
        end: (outcome, error) => {
          legSpan.setAttribute('baton.leg.outcome', outcome);
          if (error !== undefined) fail(legSpan, error);
          legSpan.end();
        },
      };
    },
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

async function inSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    fail(span, error);
    throw error;
  } finally {
    span.end();
  }
}

function fail(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
  if (error instanceof Error) span.recordException(error);
}
