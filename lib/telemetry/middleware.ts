import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type middy from '@middy/core';
import { otelFlushMiddlewares } from './otel-telemetry.ts';
import type { PowertoolsTelemetry, XrayTracer } from './powertools-telemetry.ts';
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
  const { logger, metrics, xray } = telemetry.powertools;
  return [
    injectLambdaContext(logger, { resetKeys: true }),
    flushMetrics(metrics),
    xrayHandlerMiddleware(xray),
    ...otel,
  ] as middy.MiddlewareObj[];
}

/**
 * Powertools' `captureLambdaHandler`, once the X-Ray tracer has loaded (at the first invocation
 * if `telemetryFor` did not load it during init); nothing at all when tracing is off.
 */
function xrayHandlerMiddleware(xray: XrayTracer): middy.MiddlewareObj {
  let capture: middy.MiddlewareObj | undefined;
  return {
    before: async (request) => {
      if (capture === undefined) {
        const tracer = await xray.load();
        if (tracer === undefined) return;
        capture = captureLambdaHandler(tracer, { captureResponse: false }) as middy.MiddlewareObj;
      }
      await capture.before?.(request);
    },
    after: async (request) => {
      await capture?.after?.(request);
    },
    onError: async (request) => {
      await capture?.onError?.(request);
    },
  };
}

/**
 * Powertools' `logMetrics`, without its warning on an invocation that recorded nothing (an intake
 * of tickets records nothing of its own: `baton dev` printed "No application metrics to publish"
 * at every ticket). The cold-start metric is captured once; the rest is flushed when there is any.
 */
function flushMetrics(metrics: Metrics): middy.MiddlewareObj {
  let cold = true;
  const flush = async () => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return {
    before: async (request) => {
      if (!cold) return;
      cold = false;
      metrics.captureColdStartMetric(request.context?.functionName);
    },
    after: flush,
    onError: flush,
  };
}
