import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { errorMessage, InvalidInputError } from '../lib/core/errors.ts';
import { ATTR_TRACEPARENT } from '../lib/core/messages.ts';
import { parseTraceparent } from '../lib/core/trace-context.ts';
import { acceptTicket, recordRejectedTicket } from '../lib/runtime/intake.ts';
import { telemetryMiddlewares } from '../lib/telemetry/middleware.ts';
import { deps, telemetry } from './runtime.ts';

/**
 * The intake function: persist each ticket's input as a turn, kick, and only then acknowledge.
 * A ticket that can never succeed is recorded as failed (or, without usable ids, left to the
 * DLQ) — never retried forever — and the rest of the batch carries on.
 */
async function handleTickets(event: SQSEvent): Promise<SQSBatchResponse> {
  const failures = await Promise.all(event.Records.map(handleRecord));
  return { batchItemFailures: failures.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}

async function handleRecord(record: SQSRecord): Promise<string | undefined> {
  const trace = parseTraceparent(record.messageAttributes[ATTR_TRACEPARENT]?.stringValue);
  const origin = { senderId: record.attributes.SenderId, messageId: record.messageId };
  try {
    await acceptTicket(record.body, trace, deps, origin);
    return undefined;
  } catch (error) {
    if (!(error instanceof InvalidInputError)) {
      telemetry.logger.error('ticket intake failed; will be redelivered', {
        messageId: record.messageId,
        error: errorMessage(error),
      });
      return record.messageId;
    }
    const reason = error.message;
    telemetry.logger.error('ticket rejected', { messageId: record.messageId, senderId: origin.senderId, reason });
    const recorded = await recordRejectedTicket(record.body, reason, deps, origin).catch(() => false);
    // Without a ticket id and agent there is no record to write: the DLQ keeps it for an operator.
    return recorded ? undefined : record.messageId;
  }
}

export const handler = middy(handleTickets).use(telemetryMiddlewares(telemetry));
