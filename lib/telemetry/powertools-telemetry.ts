import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { RuntimeLogger } from '../runtime/deps.ts';
import { METRICS_NAMESPACE, SERVICE_NAME, type Telemetry } from './telemetry.ts';

/** Powertools for AWS Lambda behind the Telemetry interface: JSON logs, EMF metrics, X-Ray. */
export interface PowertoolsTelemetry extends Telemetry {
  readonly powertools: { readonly logger: Logger; readonly metrics: Metrics; readonly tracer: Tracer };
}

function wrap(logger: Logger): RuntimeLogger {
  return {
    debug: (message, fields) => logger.debug(message, fields ?? {}),
    info: (message, fields) => logger.info(message, fields ?? {}),
    warn: (message, fields) => logger.warn(message, fields ?? {}),
    error: (message, fields) => logger.error(message, fields ?? {}),
    child: (fields) => wrap(logger.createChild({ persistentKeys: fields as Record<string, string> })),
  };
}

export function createPowertoolsTelemetry(): PowertoolsTelemetry {
  const logger = new Logger({ serviceName: SERVICE_NAME });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
  // Off outside Lambda (no X-Ray daemon locally): Powertools reads POWERTOOLS_TRACE_ENABLED too.
  const tracer = new Tracer({
    serviceName: SERVICE_NAME,
    enabled: process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined && process.env.BATON_LOCAL !== '1',
  });
  return {
    powertools: { logger, metrics, tracer },
    logger: wrap(logger),
    metrics: {
      count: (name, value = 1, dimensions) => {
        if (!dimensions) return metrics.addMetric(name, MetricUnit.Count, value);
        // A metric with its own dimensions goes out as its own EMF document.
        const single = metrics.singleMetric();
        for (const [key, dim] of Object.entries(dimensions)) single.addDimension(key, dim);
        single.addMetric(name, MetricUnit.Count, value);
      },
      duration: (name, ms) => metrics.addMetric(name, MetricUnit.Milliseconds, ms),
      bytes: (name, n) => metrics.addMetric(name, MetricUnit.Bytes, n),
    },
    tracer: {
      annotateLeg: ({ session, turn, tenant, agent, traceId, epoch }) => {
        if (!tracer.isTracingEnabled()) return;
        tracer.putAnnotation('session', session);
        if (turn) tracer.putAnnotation('turn', turn);
        tracer.putAnnotation('tenant', tenant);
        tracer.putAnnotation('agent', agent);
        tracer.putAnnotation('traceId', traceId);
        tracer.putAnnotation('epoch', epoch);
      },
    },
    flush: () => metrics.publishStoredMetrics(),
  };
}
