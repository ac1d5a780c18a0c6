import { Segment } from 'aws-xray-sdk-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryTelemetry } from '../../../lib/telemetry/memory-telemetry.ts';
import { telemetryMiddlewares } from '../../../lib/telemetry/middleware.ts';
import { createPowertoolsTelemetry } from '../../../lib/telemetry/powertools-telemetry.ts';
import { METRIC } from '../../../lib/telemetry/telemetry.ts';

const LAMBDA_ENV = 'AWS_Lambda_nodejs24.x';

/**
 * Captures what is written to stdout and stderr (Powertools sends warnings and errors there)
 * while `act` runs, as JSON documents one per line.
 */
function captureOutput(act: () => void): Array<Record<string, unknown>> {
  const chunks: string[] = [];
  const record = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(record),
    vi.spyOn(process.stderr, 'write').mockImplementation(record),
  ];
  try {
    act();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return chunks
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createPowertoolsTelemetry logger', () => {
  it('prints JSON lines that carry the child’s persistent keys and the call’s fields', () => {
    // Arrange
    vi.stubEnv('POWERTOOLS_DEV', '');
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
    const telemetry = createPowertoolsTelemetry();
    const leg = telemetry.logger
      .child({ tenant: 'acme', agent: 'orders', sessionId: 's1' })
      .child({ turnId: 't1', epoch: 3, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });

    // Act
    const lines = captureOutput(() => {
      leg.info('step appended', { seq: 8 });
      leg.warn('lease renewal throttled');
    });

    // Assert
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 'INFO',
      message: 'step appended',
      service: 'baton',
      tenant: 'acme',
      agent: 'orders',
      sessionId: 's1',
      turnId: 't1',
      epoch: 3,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      seq: 8,
    });
    expect(lines[1]).toMatchObject({ level: 'WARN', message: 'lease renewal throttled', sessionId: 's1', epoch: 3 });
  });
});

describe('createPowertoolsTelemetry metrics', () => {
  it('emits buffered metrics as one EMF document in the Baton namespace on flush', () => {
    // Arrange
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const telemetry = createPowertoolsTelemetry();
    telemetry.metrics.count(METRIC.steps);
    telemetry.metrics.duration(METRIC.stepDuration, 42);
    telemetry.metrics.bytes(METRIC.bytesJournaled, 2048);

    // Act
    const documents = captureOutput(() => telemetry.metrics.flush());

    // Assert
    expect(documents).toHaveLength(1);
    const emf = documents[0] as { _aws: { CloudWatchMetrics: Array<Record<string, unknown>> } } & Record<
      string,
      unknown
    >;
    expect(emf._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'Baton',
      Dimensions: [['service']],
      Metrics: expect.arrayContaining([
        { Name: 'Steps', Unit: 'Count' },
        { Name: 'StepDuration', Unit: 'Milliseconds' },
        { Name: 'BytesJournaled', Unit: 'Bytes' },
      ]),
    });
    expect(emf).toMatchObject({ service: 'baton', Steps: 1, StepDuration: 42, BytesJournaled: 2048 });
  });

  it('emits a metric with its own dimensions as its own EMF document right away', () => {
    // Arrange
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const telemetry = createPowertoolsTelemetry();

    // Act
    const documents = captureOutput(() => telemetry.metrics.count(METRIC.outcomes, 1, { status: 'failed' }));

    // Assert
    expect(documents).toHaveLength(1);
    expect(documents[0]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'Baton', Metrics: [{ Name: 'Outcomes', Unit: 'Count' }] }] },
      status: 'failed',
      Outcomes: 1,
    });
  });
});

describe('createPowertoolsTelemetry tracer', () => {
  it('turns tracing on only in a Lambda environment, and never in the local stack', async () => {
    // Arrange: Powertools reads the environment when the tracer is built, at its load.
    const tracerIn = (env: Record<string, string>) => {
      for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
      return createPowertoolsTelemetry().powertools.xray.load();
    };

    // Act
    const tracers = [
      await tracerIn({ AWS_EXECUTION_ENV: '' }),
      await tracerIn({ AWS_EXECUTION_ENV: LAMBDA_ENV }),
      await tracerIn({ BATON_LOCAL: '1' }),
      await tracerIn({ BATON_LOCAL: '', POWERTOOLS_TRACE_ENABLED: 'false' }),
    ];
    const enabled = tracers.map((tracer) => tracer?.isTracingEnabled() ?? false);

    // Assert
    expect(enabled).toEqual([false, true, false, false]);
    // The X-Ray SDK is not even loaded where it could not trace.
    expect(tracers.map((tracer) => tracer !== undefined)).toEqual([false, true, false, false]);
  });

  it('runs a span as a plain call when tracing is off', async () => {
    // Arrange
    vi.stubEnv('AWS_EXECUTION_ENV', '');
    const telemetry = createPowertoolsTelemetry();

    // Act
    const result = await telemetry.tracer.span('model', async () => 'answer');

    // Assert
    expect(result).toBe('answer');
  });

  it('records a span as a subsegment that holds the leg annotations and the error it threw', async () => {
    // Arrange
    vi.stubEnv('AWS_EXECUTION_ENV', LAMBDA_ENV);
    vi.stubEnv('BATON_LOCAL', '');
    const telemetry = createPowertoolsTelemetry();
    const tracer = await telemetry.powertools.xray.load();
    if (tracer === undefined) throw new Error('X-Ray was not loaded in a Lambda environment');
    const { provider } = tracer;
    const root = new Segment('baton-step');
    const leg = { session: 's1', turn: 't1', tenant: 'acme', agent: 'orders', traceId: 'abc', epoch: 2 };

    // Act
    const outcome = await provider
      .getNamespace()
      .runPromise(async () => {
        provider.setSegment(root);
        return telemetry.tracer.span('leg', async () => {
          telemetry.tracer.annotateLeg(leg);
          throw new Error('model throttled');
        });
      })
      .then(
        () => 'resolved',
        (error: Error) => error.message,
      );

    // Assert
    expect(outcome).toBe('model throttled');
    const [subsegment] = (root.subsegments ?? []) as unknown as Array<{
      name: string;
      annotations: unknown;
      fault?: boolean;
      error?: boolean;
    }>;
    expect(subsegment?.name).toBe('### leg');
    expect(subsegment?.annotations).toEqual({
      session: 's1',
      turn: 't1',
      tenant: 'acme',
      agent: 'orders',
      traceId: 'abc',
      epoch: 2,
    });
    expect(subsegment?.fault || subsegment?.error).toBe(true);
  });
});

describe('telemetryMiddlewares', () => {
  it('returns the three Powertools middlewares for Powertools telemetry and none for others', () => {
    // Act
    const powertools = telemetryMiddlewares(createPowertoolsTelemetry());
    const memory = telemetryMiddlewares(createMemoryTelemetry());

    // Assert
    expect(powertools).toHaveLength(3);
    for (const middleware of powertools) expect(middleware.before).toBeTypeOf('function');
    expect(memory).toEqual([]);
  });
});

describe('the metrics middleware', () => {
  it('flushes only what an invocation recorded: nothing and no warning when it recorded nothing', () => {
    // Arrange
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const telemetry = createPowertoolsTelemetry();
    const [, metrics] = telemetryMiddlewares(telemetry) as Array<{
      before: (r: unknown) => Promise<void>;
      after: (r: unknown) => Promise<void>;
    }>;
    const request = { context: { functionName: 'intake' } };

    // Act: two invocations that record nothing (an intake), then one that counts a step.
    const quiet = captureOutput(() => {
      void metrics?.before(request);
      void metrics?.after(request);
      void metrics?.before(request);
      void metrics?.after(request);
    });
    const busy = captureOutput(() => {
      void metrics?.before(request);
      telemetry.metrics.count(METRIC.steps);
      void metrics?.after(request);
    });

    // Assert
    // Nothing but (at most once) the cold-start document: no warning, no empty EMF.
    expect(quiet.filter((d) => !('ColdStart' in d))).toEqual([]);
    expect(quiet.length).toBeLessThanOrEqual(1);
    expect(busy).toEqual([expect.objectContaining({ Steps: 1 })]);
  });
});
