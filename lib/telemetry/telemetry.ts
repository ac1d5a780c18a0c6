/** Structured fields of a log line; values must serialise to JSON. */
export type LogFields = Record<string, unknown>;

/** A structured logger. `child` returns one whose fields appear on every line it writes. */
export interface TelemetryLogger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** The runtime adds tenant, agent, sessionId, turnId, seq, epoch and traceId this way. */
  child(fields: LogFields): TelemetryLogger;
}

/** Metrics, buffered until `flush` (the Lambda middleware flushes at the end of each invocation). */
export interface TelemetryMetrics {
  count(name: string, value?: number, dimensions?: Record<string, string>): void;
  duration(name: string, ms: number): void;
  bytes(name: string, n: number): void;
  flush(): void;
}

/** What one leg is annotated with, so one filter finds every leg of a session. */
export interface LegAnnotations {
  readonly session: string;
  readonly turn?: string | undefined;
  readonly tenant: string;
  readonly agent: string;
  readonly traceId: string;
  readonly epoch: number;
}

/** Span attribute values, as OpenTelemetry takes them. */
export type SpanAttributes = Record<string, string | number | boolean | string[]>;

/** A span in progress: attributes known only once its work is done (token usage, finish reason). */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
}

/** What a leg's span is opened with: its annotations, its own span id and the previous leg's. */
export interface LegTraceStart extends LegAnnotations {
  /** This leg's span id: the one its marker journals in `traceparent` and its kicks carry. */
  readonly spanId: string;
  readonly sampled: boolean;
  /** The previous leg of the turn (from its journaled traceparent), which this leg's span links to. */
  readonly previous?: { readonly traceId: string; readonly spanId: string } | undefined;
  readonly reason: string;
}

/** One leg's span, and the parent of the model and tool spans inside it. */
export interface LegSpan {
  /** Runs `fn` in a child span of the leg, recording its error if it throws. */
  span<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** Ends the leg's span with how the leg ended. A killed leg never gets here: its span is never exported. */
  end(outcome: string, error?: unknown): void;
}

/**
 * Tracing, kept this small on purpose: X-Ray (Powertools) and OpenTelemetry (otel-tracer.ts)
 * implement it, chosen by configuration, without touching the runtime.
 */
export interface TelemetryTracer {
  annotateLeg(annotations: LegAnnotations): void;
  /** Runs `fn` inside a named span (an X-Ray subsegment), recording its error if it throws. */
  span<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Opens a leg's span (a tracer without leg spans leaves this out: the runtime then traces nothing per step). */
  startLeg?(leg: LegTraceStart): LegSpan;
}

/** Baton's telemetry: a structured logger, metrics and a tracer behind one small interface. */
export interface Telemetry {
  readonly logger: TelemetryLogger;
  readonly metrics: TelemetryMetrics;
  readonly tracer: TelemetryTracer;
}

/** Metric names, one place (the dashboard and alarms use the same). */
export const METRIC = {
  steps: 'Steps',
  stepDuration: 'StepDuration',
  legs: 'Legs',
  yields: 'Yields',
  recoveries: 'Recoveries',
  leaseConflicts: 'LeaseConflicts',
  duplicateKicksDropped: 'DuplicateKicksDropped',
  bytesJournaled: 'BytesJournaled',
  inputTokens: 'InputTokens',
  outputTokens: 'OutputTokens',
  /** Counted with the dimension `status` (completed · failed · cancelled · superseded). */
  outcomes: 'Outcomes',
  stalledSessions: 'StalledSessions',
  /** Chunks of streamed model text written for live followers (never journaled), and the writes that failed. */
  liveTextWrites: 'LiveTextWrites',
  liveTextWriteFailures: 'LiveTextWriteFailures',
} as const;
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export const METRICS_NAMESPACE = 'Baton';
export const SERVICE_NAME = 'baton';

const noopLogger: TelemetryLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => noopLogger,
};

/** Telemetry that records nothing (benchmarks, tools that must stay quiet). */
export const noopTelemetry: Telemetry = {
  logger: noopLogger,
  metrics: { count: () => {}, duration: () => {}, bytes: () => {}, flush: () => {} },
  tracer: { annotateLeg: () => {}, span: (_name, fn) => fn() },
};
