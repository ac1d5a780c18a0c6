import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { agentRegistry } from '../agent/define-agent.ts';
import { errorMessage, InvalidInputError } from '../core/errors.ts';
import { ATTR_TRACEPARENT, describeIssues, Kick } from '../core/messages.ts';
import { parseTraceparent } from '../core/trace-context.ts';
import { acceptTicket, recordRejectedTicket } from '../runtime/intake.ts';
import { runKick } from '../runtime/step-runner.ts';
import { sweep } from '../runtime/sweeper.ts';
import { telemetryMiddlewares } from '../telemetry/middleware.ts';
import { type FunctionConfig, loadConfig } from './function-config.ts';
import { createRuntimeDeps, type FunctionRuntime, type RuntimeDepsOverrides } from './runtime-deps.ts';

/** Options of a handler factory: the agents, and optionally the config and overrides (tests, local stack). */
export interface HandlerOptions extends RuntimeDepsOverrides {
  /** The function's configuration; parsed from `process.env` when absent. */
  readonly config?: FunctionConfig | undefined;
}

/**
 * No early timeout: middy's default rejects the invocation 5 ms before Lambda's deadline, so the
 * invocation ends as an error and Lambda keeps the environment, with whatever the handler left
 * running in it: a leg stuck in a tool that ignores its abort signal, whose heartbeat then renews
 * the lease in every later invocation (locally, for good), leaving the session held by no one
 * working. At Lambda's own timeout the environment is reset, the leg goes with it, and its
 * lease expires for a recovery (and, if the step always hangs, the crash-loop cap).
 */
const MIDDY_OPTIONS = { timeoutEarlyInMillis: 0 };

const runtimeOf = (options: HandlerOptions): FunctionRuntime =>
  createRuntimeDeps(options.config ?? loadConfig(process.env), options);

const batchResponse = (failures: (string | undefined)[]): SQSBatchResponse => ({
  batchItemFailures: failures.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })),
});

/**
 * The intake function: persist each ticket's input as a turn, kick, and only then acknowledge.
 * A ticket that can never succeed is recorded as failed (or, without usable ids, left to the
 * DLQ) — never retried forever — and the rest of the batch carries on.
 * @example export const handler = createIntakeHandler({ agents });
 */
export function createIntakeHandler(options: HandlerOptions) {
  const { deps, telemetry } = runtimeOf(options);

  async function handleRecord(record: SQSRecord): Promise<string | undefined> {
    const trace = parseTraceparent(record.messageAttributes[ATTR_TRACEPARENT]?.stringValue);
    const origin = {
      senderId: record.attributes.SenderId,
      messageId: record.messageId,
      sentAt: Number(record.attributes.SentTimestamp) || undefined,
    };
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
      const recorded = await recordRejectedTicket(record.body, reason, deps, origin, trace).catch(() => false);
      // Without a ticket id and agent there is no record to write: the DLQ keeps it for an operator.
      return recorded ? undefined : record.messageId;
    }
  }

  const handleTickets = async (event: SQSEvent): Promise<SQSBatchResponse> =>
    batchResponse(await Promise.all(event.Records.map(handleRecord)));
  return middy(handleTickets, MIDDY_OPTIONS).use(telemetryMiddlewares(telemetry));
}

/**
 * The step function: each record is a kick; each kick runs one leg of its session. Kicks of one
 * batch run concurrently (they name different sessions, or all but one are dropped).
 * @example export const handler = createStepHandler({ agents });
 */
export function createStepHandler(options: HandlerOptions) {
  const { deps, telemetry } = runtimeOf(options);

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

  async function handleKicks(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const failures = await Promise.all(event.Records.map((record) => handleRecord(record, context)));
    await deps.failpoint('after-release');
    return batchResponse(failures);
  }
  return middy(handleKicks, MIDDY_OPTIONS).use(telemetryMiddlewares(telemetry));
}

/**
 * The sweeper: runs on a schedule and polls every few seconds within its window while anything is
 * leased, pending or due in it (once, and returns, when nothing is). It needs no
 * agents (it re-kicks stalled sessions; the step function runs them).
 * @example export const handler = createSweeperHandler();
 */
export function createSweeperHandler(options: Partial<HandlerOptions> = {}) {
  const { config, deps, telemetry } = runtimeOf({ ...options, agents: options.agents ?? agentRegistry([]) });
  const handleSchedule = async (_event: unknown, context: Context) =>
    sweep(
      {
        windowMs: config.sweepWindowMs,
        intervalMs: config.sweepIntervalMs,
        stalledAfterMs: 2 * config.leaseTtlMs,
        remainingMs: () => context.getRemainingTimeInMillis(),
      },
      deps,
    );
  return middy(handleSchedule, MIDDY_OPTIONS).use(telemetryMiddlewares(telemetry));
}
