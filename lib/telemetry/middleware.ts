import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type middy from '@middy/core';
import type { PowertoolsTelemetry } from './powertools-telemetry.ts';
import type { Telemetry } from './telemetry.ts';

const isPowertools = (telemetry: Telemetry): telemetry is PowertoolsTelemetry => 'powertools' in telemetry;

/**
 * The Powertools middy middlewares: the Lambda context on every log line, EMF flushed (with a
 * cold-start metric) after each invocation, and the handler's X-Ray subsegment, which leg
 * annotations land on. Other telemetries need no middleware: the list is empty.
 * @example export const handler = middy(handleKicks).use(telemetryMiddlewares(telemetry));
 */
export function telemetryMiddlewares(telemetry: Telemetry): middy.MiddlewareObj[] {
  if (!isPowertools(telemetry)) return [];
  const { logger, metrics, tracer } = telemetry.powertools;
  return [
    injectLambdaContext(logger, { resetKeys: true }),
    logMetrics(metrics, { captureColdStartMetric: true }),
    captureLambdaHandler(tracer, { captureResponse: false }),
  ] as middy.MiddlewareObj[];
}
