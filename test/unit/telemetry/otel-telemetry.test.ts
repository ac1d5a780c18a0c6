import { describe, expect, it } from 'vitest';
import { telemetryMiddlewares } from '../../../lib/telemetry/middleware.ts';
import { withOtelTracing } from '../../../lib/telemetry/otel-telemetry.ts';
import { noopTelemetry } from '../../../lib/telemetry/telemetry.ts';

describe('choosing OpenTelemetry by configuration', () => {
  it('swaps only the tracer, and flushes spans after each invocation', async () => {
    const telemetry = await withOtelTracing(noopTelemetry);
    expect(telemetry.logger).toBe(noopTelemetry.logger);
    expect(telemetry.tracer.startLeg).toBeTypeOf('function');
    const middlewares = telemetryMiddlewares(telemetry);
    expect(middlewares).toHaveLength(1);
    expect(middlewares[0]).toMatchObject({ after: expect.any(Function), onError: expect.any(Function) });
    expect(telemetryMiddlewares(noopTelemetry)).toEqual([]);
    await telemetry.otel.shutdown();
  });
});
