import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/core/errors.ts';
import { deriveSessionId } from '../../lib/core/ids.ts';
import type { Kick, Result, Ticket } from '../../lib/core/messages.ts';
import { formatTraceparent, type TraceContext, traceIdFromXrayHeader } from '../../lib/core/trace-context.ts';
import type { ResultPublisher, TicketQueue, WorkQueue } from '../../lib/ports/queues.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const nonEmpty = <T>(items: T[]): T[] | undefined => (items.length > 0 ? items : undefined);

export type QueueName = 'work' | 'results' | 'tickets';

/** A message as a consumer (a Lambda event source) receives it. */
export interface ReceivedMessage {
  readonly body: unknown;
  /** Message attributes (string values); the local AWSTraceHeader shim attribute excluded. */
  readonly attributes: Readonly<Record<string, string>>;
  /** The X-Ray header, where Lambda presents it (`record.attributes.AWSTraceHeader`). */
  readonly awsTraceHeader?: string | undefined;
}

export interface QueueHarness {
  readonly workQueue: WorkQueue;
  readonly results: ResultPublisher;
  readonly tickets: TicketQueue;
  /** Receives (and deletes) what is visible on a queue now. */
  receive(queue: QueueName): Promise<ReceivedMessage[]>;
  /** Lets `ms` pass: a manual clock moves, or real time is waited for. */
  elapse(ms: number): Promise<void>;
}

export type MakeQueueHarness = () => QueueHarness | Promise<QueueHarness>;

const TRACE: TraceContext = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };

const kickFor = (id = deriveSessionId('default', 'order-investigator', randomUUID())): Kick => ({
  v: 1,
  session: { tenant: 'default', agent: 'order-investigator', id },
  reason: 'continuation',
  fromEpoch: 3,
  turnId: 'turn-1',
});

const result: Result = {
  v: 1,
  ticketId: 'T-1001',
  tenant: 'default',
  agent: 'order-investigator',
  sessionId: 'session-1',
  turnId: 'T-1001',
  status: 'completed',
  output: { verdict: 'refund' },
  legs: 3,
  steps: 12,
  usage: { inputTokens: 100, outputTokens: 20 },
};

/**
 * The queue ports' contract: bodies validated before sending, the trace context in `traceparent`
 * and as the X-Ray header of the same trace, the result id for consumer dedupe, delays honoured.
 */
export function describeQueueContract(name: string, makeHarness: MakeQueueHarness): void {
  describe(`queue contract: ${name}`, () => {
    it('delivers a kick with its traceparent and the X-Ray header of the same trace', async () => {
      // Arrange
      const harness = await makeHarness();
      const kick = kickFor();

      // Act
      await harness.workQueue.sendKick(kick, { trace: TRACE });
      const received = await harness.receive('work');

      // Assert
      expect(received).toHaveLength(1);
      expect(received[0]?.body).toEqual(kick);
      expect(received[0]?.attributes).toEqual({ traceparent: formatTraceparent(TRACE) });
      expect(traceIdFromXrayHeader(received[0]?.awsTraceHeader)).toBe(TRACE.traceId);
    });

    it('sends no attributes with a kick that has no trace context', async () => {
      // Arrange
      const harness = await makeHarness();

      // Act
      await harness.workQueue.sendKick(kickFor());
      const received = await harness.receive('work');

      // Assert
      expect(received[0]?.attributes).toEqual({});
      expect(received[0]?.awsTraceHeader).toBeUndefined();
    });

    it('refuses a kick that breaks its contract and sends nothing', async () => {
      // Arrange
      const harness = await makeHarness();
      const bad = { ...kickFor(), reason: 'because' } as unknown as Kick;

      // Act
      const sending = harness.workQueue.sendKick(bad);

      // Assert
      await expect(sending).rejects.toThrow(InvalidInputError);
      expect(await harness.receive('work')).toEqual([]);
    });

    it('holds a delayed kick back until its delay has passed', async () => {
      // Arrange
      const harness = await makeHarness();
      const kick = kickFor();

      // Act
      await harness.workQueue.sendKick(kick, { delaySeconds: 1 });
      const early = await harness.receive('work');
      await harness.elapse(1_000);
      // Past the delay the kick is visible; a busy emulator may take a moment longer to show it.
      const late = await waitFor(async () => nonEmpty(await harness.receive('work')), {
        what: 'the delayed kick after its delay',
        timeoutMs: 30_000,
      });

      // Assert
      expect(early).toEqual([]);
      expect(late.map((message) => message.body)).toEqual([kick]);
    });

    it('refuses a delay beyond SQS’s 900 seconds', async () => {
      const harness = await makeHarness();

      await expect(harness.workQueue.sendKick(kickFor(), { delaySeconds: 901 })).rejects.toThrow(InvalidInputError);
    });

    it('publishes a result with the session/turn id consumers dedupe on', async () => {
      // Arrange
      const harness = await makeHarness();

      // Act
      await harness.results.publish(result, { trace: TRACE });
      const received = await harness.receive('results');

      // Assert
      expect(received[0]?.body).toEqual(result);
      expect(received[0]?.attributes).toEqual({
        'baton-result-id': 'session-1/T-1001',
        traceparent: formatTraceparent(TRACE),
      });
    });

    it('refuses a result that breaks its contract', async () => {
      const harness = await makeHarness();

      await expect(harness.results.publish({ ...result, status: 'done' } as unknown as Result)).rejects.toThrow(
        InvalidInputError,
      );
    });

    it('submits a ticket with the producer’s trace context', async () => {
      // Arrange
      const harness = await makeHarness();
      const ticket: Ticket = { v: 1, ticketId: 'T-2002', agent: 'order-investigator', input: { orderId: 'O-7' } };

      // Act
      await harness.tickets.submit(ticket, { trace: TRACE });
      const received = await harness.receive('tickets');

      // Assert
      expect(received[0]?.body).toEqual(ticket);
      expect(received[0]?.attributes.traceparent).toBe(formatTraceparent(TRACE));
    });

    it('carries emoji, astral characters and U+FFFF in a ticket and a result unchanged', async () => {
      // Arrange: characters JSON keeps raw, outside the body alphabet of SQS (U+FFFF) or fauxqs (astral).
      const harness = await makeHarness();
      const text = 'héllo 🎉 👩‍👩‍👧 𝄞 中文 \uffff \u2028 end';
      const ticket: Ticket = { v: 1, ticketId: 'T-emoji', agent: 'echo', input: { text, 'k🔑': [text] } };

      // Act
      await harness.tickets.submit(ticket);
      await harness.results.publish({ ...result, output: text });
      const tickets = await harness.receive('tickets');
      const results = await harness.receive('results');

      // Assert
      expect(tickets[0]?.body).toEqual(ticket);
      expect(results[0]?.body).toEqual({ ...result, output: text });
    });
  });
}
