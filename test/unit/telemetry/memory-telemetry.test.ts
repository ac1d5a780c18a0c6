import { describe, expect, it } from 'vitest';
import { createMemoryTelemetry } from '../../../lib/telemetry/memory-telemetry.ts';
import { METRIC, noopTelemetry, type Telemetry } from '../../../lib/telemetry/telemetry.ts';

describe('createMemoryTelemetry', () => {
  it('records the persistent fields of nested children on every line, the call’s own fields last', () => {
    // Arrange
    const telemetry = createMemoryTelemetry();
    const session = telemetry.logger.child({ tenant: 'acme', agent: 'orders', sessionId: 's1', seq: 1 });
    const leg = session.child({ turnId: 't1', epoch: 3, seq: 7 });

    // Act
    leg.info('step appended', { seq: 8, bytes: 120 });
    session.warn('lease lost');
    telemetry.logger.error('malformed kick dropped');

    // Assert
    expect(telemetry.lines).toEqual([
      {
        level: 'info',
        message: 'step appended',
        tenant: 'acme',
        agent: 'orders',
        sessionId: 's1',
        turnId: 't1',
        epoch: 3,
        seq: 8,
        bytes: 120,
      },
      { level: 'warn', message: 'lease lost', tenant: 'acme', agent: 'orders', sessionId: 's1', seq: 1 },
      { level: 'error', message: 'malformed kick dropped' },
    ]);
  });

  it('keeps every metric with its unit and hands each flush the points since the previous one', () => {
    // Arrange
    const telemetry = createMemoryTelemetry();
    telemetry.metrics.count(METRIC.steps);
    telemetry.metrics.duration(METRIC.stepDuration, 42);
    telemetry.metrics.flush();

    // Act
    telemetry.metrics.count(METRIC.outcomes, 1, { status: 'completed' });
    telemetry.metrics.bytes(METRIC.bytesJournaled, 2048);
    telemetry.metrics.count(METRIC.steps, 2);
    telemetry.metrics.flush();

    // Assert
    expect(telemetry.flushes).toEqual([
      [
        { name: 'Steps', value: 1, unit: 'Count', dimensions: undefined },
        { name: 'StepDuration', value: 42, unit: 'Milliseconds' },
      ],
      [
        { name: 'Outcomes', value: 1, unit: 'Count', dimensions: { status: 'completed' } },
        { name: 'BytesJournaled', value: 2048, unit: 'Bytes' },
        { name: 'Steps', value: 2, unit: 'Count', dimensions: undefined },
      ],
    ]);
    expect(telemetry.total(METRIC.steps)).toBe(3);
  });

  it('records leg annotations and whether each span succeeded, passing results and errors through', async () => {
    // Arrange
    const telemetry = createMemoryTelemetry();
    const leg = { session: 's1', turn: 't1', tenant: 'acme', agent: 'orders', traceId: 'abc', epoch: 2 };

    // Act
    telemetry.tracer.annotateLeg(leg);
    const result = await telemetry.tracer.span('model', async () => 'answer');
    const failure = telemetry.tracer.span('tool', async () => {
      throw new Error('carrier down');
    });

    // Assert
    await expect(failure).rejects.toThrow('carrier down');
    expect(result).toBe('answer');
    expect(telemetry.annotations).toEqual([leg]);
    expect(telemetry.spans).toEqual([
      { name: 'model', ok: true },
      { name: 'tool', ok: false },
    ]);
  });

  it('fits where the runtime expects its telemetry, as the no-op telemetry does', async () => {
    // Arrange
    const candidates: Telemetry[] = [createMemoryTelemetry(), noopTelemetry];

    // Act
    const outputs = await Promise.all(
      candidates.map(async (telemetry) => {
        telemetry.logger.child({ sessionId: 's1' }).info('quiet');
        telemetry.metrics.count(METRIC.legs);
        return noopTelemetry.tracer.span('leg', async () => 7);
      }),
    );

    // Assert
    expect(outputs).toEqual([7, 7]);
  });
});
