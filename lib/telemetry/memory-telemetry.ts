import type { LegAnnotations, LogFields, Telemetry, TelemetryLogger } from './telemetry.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** One captured log line: level, message, the child's persistent fields and the call's own. */
export type LogLine = { readonly level: LogLevel; readonly message: string } & LogFields;

export interface MetricPoint {
  readonly name: string;
  readonly value: number;
  readonly unit: 'Count' | 'Milliseconds' | 'Bytes';
  readonly dimensions?: Record<string, string> | undefined;
}

export interface SpanRecord {
  readonly name: string;
  readonly ok: boolean;
}

/** Telemetry that keeps everything in arrays, for assertions. */
export interface MemoryTelemetry extends Telemetry {
  readonly lines: LogLine[];
  /** Every metric recorded, flushed or not, in order. */
  readonly points: MetricPoint[];
  /** What each `flush` emitted: the points recorded since the previous one. */
  readonly flushes: MetricPoint[][];
  readonly annotations: LegAnnotations[];
  readonly spans: SpanRecord[];
  /** Sum of a metric's recorded values. */
  total(name: string): number;
}

/** Builds a telemetry that captures log lines, metrics, annotations and spans in memory. */
export function createMemoryTelemetry(): MemoryTelemetry {
  const lines: LogLine[] = [];
  const points: MetricPoint[] = [];
  const flushes: MetricPoint[][] = [];
  const annotations: LegAnnotations[] = [];
  const spans: SpanRecord[] = [];
  let flushedUpTo = 0;

  const logger = (persistent: LogFields): TelemetryLogger => {
    const at = (level: LogLevel) => (message: string, fields?: LogFields) =>
      lines.push({ ...persistent, ...fields, level, message });
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (fields) => logger({ ...persistent, ...fields }),
    };
  };

  return {
    lines,
    points,
    flushes,
    annotations,
    spans,
    total: (name) => points.filter((p) => p.name === name).reduce((sum, p) => sum + p.value, 0),
    logger: logger({}),
    metrics: {
      count: (name, value = 1, dimensions) => points.push({ name, value, unit: 'Count', dimensions }),
      duration: (name, ms) => points.push({ name, value: ms, unit: 'Milliseconds' }),
      bytes: (name, n) => points.push({ name, value: n, unit: 'Bytes' }),
      flush: () => {
        flushes.push(points.slice(flushedUpTo));
        flushedUpTo = points.length;
      },
    },
    tracer: {
      annotateLeg: (leg) => annotations.push({ ...leg }),
      span: async (name, fn) => {
        try {
          const result = await fn();
          spans.push({ name, ok: true });
          return result;
        } catch (error) {
          spans.push({ name, ok: false });
          throw error;
        }
      },
    },
  };
}
