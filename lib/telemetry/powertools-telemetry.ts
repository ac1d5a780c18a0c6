import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
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
  readonly powertools: { readonly logger: Logger; readonly metrics: Metrics; readonly xray: XrayTracer };
}

/**
 * Powertools' X-Ray tracer, imported on demand: the X-Ray SDK is the costliest thing a function
 * would load at cold start after the AWS clients, and it traces nothing outside Lambda, with
 * tracing switched off, or with OpenTelemetry. `telemetryFor` loads it during init when tracing
 * is on (every invocation uses it then); otherwise the handler's middleware loads it before the
 * first invocation.
 */
export interface XrayTracer {
  /** Whether tracing can be on here; when false, `load` resolves undefined and imports nothing. */
  readonly wanted: boolean;
  /** The tracer once `load` has resolved; undefined before, and when not wanted. */
  readonly current: Tracer | undefined;
  /** Imports and builds the tracer, once. */
  load(): Promise<Tracer | undefined>;
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
  const xray = lazyXrayTracer(serviceName, tracingEnabled && xrayCanTrace(process.env));
  return {
    powertools: { logger, metrics, xray },
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
    tracer: xrayTracer(xray),
  };
}

/**
 * The checks Powertools' Tracer makes before it traces anything, short of loading it: in a
 * Lambda environment, and not switched off by POWERTOOLS_TRACE_ENABLED. Powertools checks the
 * rest (SAM and Amplify local runs) once loaded.
 */
function xrayCanTrace(env: NodeJS.ProcessEnv): boolean {
  return (env.AWS_EXECUTION_ENV ?? '') !== '' && env.POWERTOOLS_TRACE_ENABLED?.toLowerCase() !== 'false';
}

function lazyXrayTracer(serviceName: string, wanted: boolean): XrayTracer {
  let loading: Promise<Tracer | undefined> | undefined;
  const holder: { -readonly [K in keyof XrayTracer]: XrayTracer[K] } = {
    wanted,
    current: undefined,
    load() {
      if (!wanted) return Promise.resolve(undefined);
      loading ??= import('@aws-lambda-powertools/tracer').then(({ Tracer }) => {
        holder.current = new Tracer({ serviceName });
        return holder.current;
      });
      return loading;
    },
  };
  return holder;
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

function xrayTracer(xray: XrayTracer): TelemetryTracer {
  return {
    annotateLeg: (leg: LegAnnotations) => {
      const tracer = xray.current;
      if (!tracer?.isTracingEnabled()) return;
      tracer.putAnnotation('session', leg.session);
      if (leg.turn !== undefined) tracer.putAnnotation('turn', leg.turn);
      tracer.putAnnotation('tenant', leg.tenant);
      tracer.putAnnotation('agent', leg.agent);
      tracer.putAnnotation('traceId', leg.traceId);
      tracer.putAnnotation('epoch', leg.epoch);
    },
    span: <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      // Without a current segment (no trace header, or outside a handler) there is no parent.
      const tracer = xray.current;
      if (!tracer?.isTracingEnabled() || tracer.provider.getSegment() === undefined) return fn();
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
