import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { errorMessage } from '../lib/core/errors.ts';
import { describeIssues, Kick } from '../lib/core/messages.ts';
import { runKick } from '../lib/runtime/step-runner.ts';
import { telemetryMiddlewares } from '../lib/telemetry/middleware.ts';
import { deps, telemetry } from './runtime.ts';

/**
 * The step function: each record is a kick; each kick runs one leg of its session. Kicks of one
 * batch run concurrently (they name different sessions, or all but one are dropped).
 */
async function handleKicks(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  const failures = await Promise.all(event.Records.map((record) => handleRecord(record, context)));
  await deps.failpoint('after-release');
  return { batchItemFailures: failures.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}

async function handleRecord(record: SQSRecord, context: Context): Promise<string | undefined> {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    body = undefined;
  }
  const kick = Kick.safeParse(body);
  if (!kick.success) {
    // Retrying cannot fix a malformed kick: log it where an operator looks and let it go.
    telemetry.logger.error('malformed kick dropped', {
      messageId: record.messageId,
      problem: body === undefined ? 'not JSON' : describeIssues(kick.error),
    });
    return undefined;
  }
  try {
    await runKick(
      kick.data,
      { requestId: context.awsRequestId, remainingMs: () => context.getRemainingTimeInMillis() },
      deps,
    );
    return undefined;
  } catch (error) {
    // Transient (throttling, 5xx): the visibility timeout brings the kick back.
    telemetry.logger.error('kick failed; will be redelivered', {
      messageId: record.messageId,
      sessionId: kick.data.session.id,
      error: errorMessage(error),
    });
    return record.messageId;
  }
}

export const handler = middy(handleKicks).use(telemetryMiddlewares(telemetry));
