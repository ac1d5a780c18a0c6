import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import {
  DEFAULT_SERVICE_NAME,
  type LegAnnotations,
  type LogFields,
  METRICS_NAMESPACE,
  type Telemetry,
  type TelemetryLogger,
  type TelemetryTracer,
} from './telemetry.ts';

/** Powertools for AWS Lambda behind the Telemetry interface: JSON logs, EMF metrics, X-Ray. */
export interface PowertoolsTelemetry extends Telemetry {
  /** The Powertools instances, for their middy middlewares (see middleware.ts). */
  readonly powertools: { readonly logger: Logger; readonly metrics: Metrics; readonly tracer: Tracer };
}

export interface PowertoolsTelemetryOptions {
  readonly serviceName?: string | undefined;
  readonly namespace?: string | undefined;
  /**
   * Tracing is off unless this is true AND Powertools finds a Lambda environment: it also turns
   * itself off without AWS_EXECUTION_ENV, under SAM local or Amplify mock, and when
   * POWERTOOLS_TRACE_ENABLED=false. Defaults to off in the local stack (BATON_LOCAL=1), whose
   * workers have no X-Ray daemon to send to.
   */
  readonly tracingEnabled?: boolean | undefined;
}

/**
 * Builds Powertools-backed telemetry; build it once at module scope, as the functions do.
 * @example export const telemetry = createPowertoolsTelemetry();
 */
export function createPowertoolsTelemetry(options: PowertoolsTelemetryOptions = {}): PowertoolsTelemetry {
  const serviceName = options.serviceName ?? DEFAULT_SERVICE_NAME;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ namespace: options.namespace ?? METRICS_NAMESPACE, serviceName, logger });
  const tracingEnabled = options.tracingEnabled ?? process.env.BATON_LOCAL !== '1';
  // Only `false` is passed: `true` would not force tracing on anyway, Powertools checks its env.
  const tracer = new Tracer({ serviceName, ...(tracingEnabled ? {} : { enabled: false }) });
  return {
    powertools: { logger, metrics, tracer },
    logger: wrapLogger(logger),
    metrics: {
      count: (name, value = 1, dimensions) => {
        if (!dimensions) return metrics.addMetric(name, MetricUnit.Count, value);
        // A metric with its own dimensions goes out as its own EMF document at once.
        const single = metrics.singleMetric();
        for (const [key, dimension] of Object.entries(dimensions)) single.addDimension(key, dimension);
        single.addMetric(name, MetricUnit.Count, value);
      },
      duration: (name, ms) => metrics.addMetric(name, MetricUnit.Milliseconds, ms),
      bytes: (name, n) => metrics.addMetric(name, MetricUnit.Bytes, n),
      flush: () => metrics.publishStoredMetrics(),
    },
    tracer: xrayTracer(tracer),
  };
}

function wrapLogger(logger: Logger): TelemetryLogger {
  const fieldsOf = (fields: LogFields | undefined) => fields ?? {};
  return {
    debug: (message, fields) => logger.debug(message, fieldsOf(fields)),
    info: (message, fields) => logger.info(message, fieldsOf(fields)),
    warn: (message, fields) => logger.warn(message, fieldsOf(fields)),
    error: (message, fields) => logger.error(message, fieldsOf(fields)),
    child: (fields) => wrapLogger(logger.createChild({ persistentKeys: fields as Record<string, string> })),
  };
}

function xrayTracer(tracer: Tracer): TelemetryTracer {
  return {
    annotateLeg: (leg: LegAnnotations) => {
      if (!tracer.isTracingEnabled()) return;
      tracer.putAnnotation('session', leg.session);
      if (leg.turn !== undefined) tracer.putAnnotation('turn', leg.turn);
      tracer.putAnnotation('tenant', leg.tenant);
      tracer.putAnnotation('agent', leg.agent);
      tracer.putAnnotation('traceId', leg.traceId);
      tracer.putAnnotation('epoch', leg.epoch);
    },
    span: <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      // Without a current segment (no trace header, or outside a handler) there is no parent.
      if (!tracer.isTracingEnabled() || tracer.provider.getSegment() === undefined) return fn();
      // captureAsyncFunc gives the subsegment its own async context, so concurrent spans (the
      // kicks of one batch) never see each other as parent.
      return tracer.provider.captureAsyncFunc(`### ${name}`, async (subsegment) => {
        try {
          return await fn();
        } catch (error) {
          subsegment?.addError(error as Error);
          throw error;
        } finally {
          subsegment?.close();
        }
      }) as Promise<T>;
    },
  };
}
