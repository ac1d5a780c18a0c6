import type middy from '@middy/core';
import type { OtelTracer } from './otel-tracer.ts';
import type { Telemetry } from './telemetry.ts';

/** Which tracer the functions use: X-Ray through Powertools (the default) or OpenTelemetry. */
export const TRACING = { xray: 'xray', otel: 'otel' } as const;
export type Tracing = (typeof TRACING)[keyof typeof TRACING];

/** What the OpenTelemetry tracer needs: optional peers, installed by a project that traces with it. */
const OTEL_PACKAGES = ['@opentelemetry/api', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http'];

/** Telemetry whose tracer is OpenTelemetry; logs and metrics stay whatever they were. */
export type OtelTelemetry<T extends Telemetry> = T & { readonly otel: OtelTracer };

/**
 * Swaps a telemetry's tracer for OpenTelemetry, exporting over OTLP/HTTP (endpoint and headers
 * from the standard OTEL_EXPORTER_OTLP_* variables). The SDK and exporter are imported here, so
 * a deployment that keeps X-Ray never loads them.
 * @example export const telemetry = await withOtelTracing(createPowertoolsTelemetry({ tracingEnabled: false }));
 */
export async function withOtelTracing<T extends Telemetry>(telemetry: T): Promise<OtelTelemetry<T>> {
  const [{ createOtelTracer }, { BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
    import('./otel-tracer.ts'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]).catch((error: unknown) => {
    throw new Error(
      `OpenTelemetry tracing needs ${OTEL_PACKAGES.join(', ')}, optional peer dependencies of Baton: add them with \`npm install ${OTEL_PACKAGES.join(' ')}\` (the versions Baton's package.json names under peerDependencies), or leave BATON_TRACING unset for X-Ray`,
      { cause: error },
    );
  });
  const otel = createOtelTracer({ spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] });
  return { ...telemetry, tracer: otel, otel };
}

/**
 * Exports the invocation's spans before Lambda freezes the environment (after the handler, and
 * when it throws). Empty for a telemetry without OpenTelemetry.
 */
export function otelFlushMiddlewares(telemetry: Telemetry): middy.MiddlewareObj[] {
  if (!('otel' in telemetry)) return [];
  const { otel } = telemetry as OtelTelemetry<Telemetry>;
  const flush = async () => {
    await otel.forceFlush().catch(() => undefined);
  };
  return [{ after: flush, onError: flush }];
}
