import type { RuntimeTelemetry } from '../runtime/deps.ts';

/**
 * Baton's telemetry: a structured logger, EMF metrics and a tracer behind one small interface.
 * Tracing is behind it on purpose: the X-Ray SDK is in maintenance (support ends February 2027),
 * and an OpenTelemetry exporter can replace it here without touching the runtime.
 */
export interface Telemetry extends RuntimeTelemetry {
  /** Emits buffered metrics (EMF); the middleware calls it at the end of each invocation. */
  flush(): void;
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
  outcomes: 'Outcomes',
  stalledSessions: 'StalledSessions',
} as const;

export const METRICS_NAMESPACE = 'Baton';
export const SERVICE_NAME = 'baton';
