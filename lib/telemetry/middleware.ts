import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type middy from '@middy/core';
import { otelFlushMiddlewares } from './otel-telemetry.ts';
import type { PowertoolsTelemetry } from './powertools-telemetry.ts';
import type { Telemetry } from './telemetry.ts';

const isPowertools = (telemetry: Telemetry): telemetry is PowertoolsTelemetry => 'powertools' in telemetry;

/**
 * The Powertools middy middlewares: the Lambda context on every log line, EMF flushed (with a
 * cold-start metric) after each invocation, and the handler's X-Ray subsegment, which leg
 * annotations land on; with OpenTelemetry, a flush of the invocation's spans. Other telemetries
 * need no middleware: the list is empty.
 * @example export const handler = middy(handleKicks).use(telemetryMiddlewares(telemetry));
 */
export function telemetryMiddlewares(telemetry: Telemetry): middy.MiddlewareObj[] {
  const otel = otelFlushMiddlewares(telemetry);
  if (!isPowertools(telemetry)) return otel;
  const { logger, metrics, tracer } = telemetry.powertools;
  return [
    injectLambdaContext(logger, { resetKeys: true }),
    logMetrics(metrics, { captureColdStartMetric: true }),
    captureLambdaHandler(tracer, { captureResponse: false }),
    ...otel,
  ] as middy.MiddlewareObj[];
}
