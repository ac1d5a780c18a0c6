import { randomUUID } from 'node:crypto';
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, ScheduledEvent, SQSEvent } from 'aws-lambda';
import { createLambdaContext, LOCAL_ACCOUNT_ID } from './lambda-context.ts';
import { toSqsRecord } from './sqs-event-record.ts';

/** A Lambda handler in its promise form (middy and Powertools handlers are). */
export type LambdaHandler = (event: never, context: Context) => unknown;

/** What the host (the worker) learns about each invocation, so a supervisor can enforce deadlines. */
export interface InvocationHooks {
  onStart?(invocation: {
    readonly requestId: string;
    readonly functionName: string;
    readonly deadlineMs: number;
  }): void;
  onEnd?(invocation: { readonly requestId: string }): void;
}

/** Lambda's long-poll wait on an SQS event source. */
export const DEFAULT_WAIT_TIME_S = 20;
/** Lambda's default batch size for standard queues. */
export const DEFAULT_BATCH_SIZE = 10;
/** Pause after a failed ReceiveMessage (emulator restarting, network), so the loop does not spin. */
const RECEIVE_ERROR_BACKOFF_MS = 1_000;

export interface EventSourceMappingOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  readonly functionName: string;
  readonly handler: LambdaHandler;
  readonly timeoutS: number;
  /** 1–10 messages per invocation. */
  readonly batchSize?: number | undefined;
  readonly waitTimeSeconds?: number | undefined;
  readonly hooks?: InvocationHooks | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

export interface RunningMapping {
  /** Stops polling and resolves once the invocation in flight (if any) has returned. */
  stop(): Promise<void>;
}

/**
 * Polls a queue and invokes a handler with SQS events as Lambda's event source mapping does,
 * with `ReportBatchItemFailures` on: successes are deleted, failures stay in flight until their
 * visibility timeout and the queue's redrive policy moves them to the DLQ.
 * @example const mapping = startEventSourceMapping({ sqs, queueUrl, queueArn, region, functionName: 'step', handler, timeoutS: 60 });
 */
export function startEventSourceMapping(options: EventSourceMappingOptions): RunningMapping {
  const log = options.log ?? ((line: string) => console.error(line));
  const abort = new AbortController();
  const loop = (async () => {
    while (!abort.signal.aborted) {
      let messages: Message[];
      try {
        messages = await receive(options, abort.signal);
      } catch (error) {
        if (abort.signal.aborted) break;
        log(`${options.functionName}: ReceiveMessage failed, retrying: ${describe(error)}`);
        await sleep(RECEIVE_ERROR_BACKOFF_MS, abort.signal);
        continue;
      }
      if (messages.length > 0) await invokeWithBatch(options, messages, log);
    }
  })();
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

async function receive(options: EventSourceMappingOptions, signal: AbortSignal): Promise<Message[]> {
  const { Messages } = await options.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: options.queueUrl,
      MaxNumberOfMessages: options.batchSize ?? DEFAULT_BATCH_SIZE,
      WaitTimeSeconds: options.waitTimeSeconds ?? DEFAULT_WAIT_TIME_S,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
    { abortSignal: signal },
  );
  return Messages ?? [];
}

async function invokeWithBatch(
  options: EventSourceMappingOptions,
  messages: Message[],
  log: (line: string) => void,
): Promise<void> {
  const event: SQSEvent = {
    Records: messages.map((message) => toSqsRecord(message, { queueArn: options.queueArn, region: options.region })),
  };
  const response = await invoke(options, event, log);
  const failed = response.ok ? failedMessageIds(response.value, event) : 'all';
  if (failed === 'all') return; // every message comes back after its visibility timeout
  const succeeded = event.Records.filter((record) => !failed.has(record.messageId));
  if (succeeded.length === 0) return;
  try {
    const { Failed } = await options.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: succeeded.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
      }),
    );
    for (const failure of Failed ?? []) log(`${options.functionName}: DeleteMessage failed: ${failure.Message}`);
  } catch (error) {
    // As with Lambda, an undeleted success is redelivered later: handlers are idempotent.
    log(`${options.functionName}: DeleteMessageBatch failed: ${describe(error)}`);
  }
}

type InvokeResult = { ok: true; value: unknown } | { ok: false };

/** Runs one invocation with a fresh context and reports its start and deadline to the host. */
async function invoke(
  options: Pick<EventSourceMappingOptions, 'functionName' | 'handler' | 'region' | 'timeoutS' | 'hooks'>,
  event: unknown,
  log: (line: string) => void,
): Promise<InvokeResult> {
  const context = createLambdaContext({
    functionName: options.functionName,
    region: options.region,
    timeoutS: options.timeoutS,
  });
  const requestId = context.awsRequestId;
  options.hooks?.onStart?.({ requestId, functionName: options.functionName, deadlineMs: context.deadlineMs });
  try {
    const value = await options.handler(event as never, context);
    return { ok: true, value };
  } catch (error) {
    log(`${options.functionName}: invocation ${requestId} failed: ${describe(error)}`);
    return { ok: false };
  } finally {
    options.hooks?.onEnd?.({ requestId });
  }
}

/**
 * The message ids a handler's response marks as failed, following Lambda's rules: no response,
 * no list or an empty list is full success; a malformed entry or an unknown id fails the batch.
 */
export function failedMessageIds(response: unknown, event: SQSEvent): Set<string> | 'all' {
  if (response === undefined || response === null) return new Set();
  if (typeof response !== 'object') return 'all';
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return 'all';
  const known = new Set(event.Records.map((record) => record.messageId));
  const failed = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !known.has(id)) return 'all';
    failed.add(id);
  }
  return failed;
}

export interface ScheduleOptions {
  readonly functionName: string;
  readonly handler: LambdaHandler;
  readonly region: string;
  readonly everyMs: number;
  readonly timeoutS: number;
  readonly hooks?: InvocationHooks | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

/**
 * Invokes a handler with an EventBridge "Scheduled Event" at once and then every `everyMs`.
 * A tick that finds the previous invocation still running is skipped, so invocations never overlap.
 */
export function startSchedule(options: ScheduleOptions): RunningMapping {
  const log = options.log ?? ((line: string) => console.error(line));
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running !== undefined) return;
    running = invoke(options, scheduledEvent(options), log).finally(() => {
      running = undefined;
    });
  };
  tick();
  const timer = setInterval(tick, options.everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

function scheduledEvent(options: Pick<ScheduleOptions, 'functionName' | 'region'>): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: LOCAL_ACCOUNT_ID,
    time: new Date().toISOString(),
    region: options.region,
    resources: [`arn:aws:events:${options.region}:${LOCAL_ACCOUNT_ID}:rule/${options.functionName}-schedule`],
    detail: {},
  };
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
