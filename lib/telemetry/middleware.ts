import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type middy from '@middy/core';
import type { PowertoolsTelemetry } from './powertools-telemetry.ts';

/** The Powertools middy middlewares: Lambda context on every log line, EMF flush, X-Ray segment. */
export function telemetryMiddlewares(telemetry: PowertoolsTelemetry): middy.MiddlewareObj[] {
  const { logger, metrics, tracer } = telemetry.powertools;
  return [
    injectLambdaContext(logger, { resetKeys: true }),
    logMetrics(metrics, { captureColdStartMetric: true }),
    captureLambdaHandler(tracer, { captureResponse: false }),
  ] as middy.MiddlewareObj[];
}
