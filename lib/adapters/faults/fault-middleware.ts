import {
  InternalServerError,
  ProvisionedThroughputExceededException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { SQSServiceException } from '@aws-sdk/client-sqs';
import type {
  DeserializeHandlerOptions,
  DeserializeMiddleware,
  HandlerExecutionContext,
  InitializeHandlerOptions,
  InitializeMiddleware,
  MetadataBearer,
  MiddlewareStack,
} from '@smithy/types';
import type { FaultConfig } from './fault-config.ts';
import type { FaultCounter } from './fault-counter.ts';

/** Commands that write an item: the ones a "commit, then fail" fault applies to. */
const DYNAMODB_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);
const SQS_SENDS = new Set(['SendMessageCommand', 'SendMessageBatchCommand']);

// A client's stack, whatever its input and output unions.
// biome-ignore lint/suspicious/noExplicitAny: middleware here is agnostic of the command's types
type AnyStack = MiddlewareStack<any, MetadataBearer>;

/**
 * Deserialize is the innermost step, below the retry middleware (finalizeRequest): every
 * attempt the SDK makes passes here, so a retry meets the fault's consequences, a committed
 * write included. Added to the client's stack, it wraps each command's deserializer.
 */
const BELOW_RETRY: DeserializeHandlerOptions = { step: 'deserialize', name: 'batonFaults', override: true };
/** Initialize is outside retry: a duplicate goes through the whole stack, retries and faults included. */
const ABOVE_RETRY: InitializeHandlerOptions = { step: 'initialize', name: 'batonDuplicateKicks', override: true };

const metadata = (httpStatusCode: number) => ({ httpStatusCode, attempts: 1, totalRetryDelay: 0 });

export interface FaultDeps {
  readonly counter: FaultCounter;
  /** In [0, 1). */
  readonly random?: (() => number) | undefined;
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Adds DynamoDB faults to a client (the document client shares its stack): throttles and 500s
 * before a request is sent, and writes that commit and then fail, all below the SDK's retry.
 * @example addDynamoDbFaults(documentClient, parseFaultSpec('dynamoThrottle=0.05'), { counter })
 */
export function addDynamoDbFaults(client: { middlewareStack: AnyStack }, config: FaultConfig, deps: FaultDeps): void {
  const random = deps.random ?? Math.random;
  const sleep = deps.sleep ?? defaultSleep;
  const middleware: DeserializeMiddleware<object, MetadataBearer> =
    (next, context: HandlerExecutionContext) => async (args) => {
      const command = context.commandName ?? '';
      await addLatency(config, random, sleep, deps.counter);
      if (config.dynamoThrottle > 0 && random() < config.dynamoThrottle) {
        deps.counter.record('dynamoThrottle');
        throw throttle(command, random());
      }
      if (config.dynamo5xx > 0 && random() < config.dynamo5xx) {
        deps.counter.record('dynamo5xx');
        throw dynamoServerError(`injected: ${command} failed with a 500 before reaching the table`);
      }
      const result = await next(args);
      if (config.commitThenFail > 0 && DYNAMODB_WRITES.has(command) && random() < config.commitThenFail) {
        deps.counter.record('commitThenFail');
        throw dynamoServerError(`injected: ${command} committed, then its response was lost`);
      }
      return result;
    };
  client.middlewareStack.add(middleware, BELOW_RETRY);
}

export interface SqsFaultOptions {
  /** Queues whose every message is sent twice when `duplicateKicks` is on (the work queue). */
  readonly duplicateQueueUrls?: readonly string[] | undefined;
}

/**
 * Adds SQS faults to a client: failed sends and latency below the retry, and, above it, a second
 * copy of every message sent to the named queues (a randomly delayed one: duplicated and reordered).
 */
export function addSqsFaults(
  client: { middlewareStack: AnyStack },
  config: FaultConfig,
  deps: FaultDeps,
  options: SqsFaultOptions = {},
): void {
  const random = deps.random ?? Math.random;
  const sleep = deps.sleep ?? defaultSleep;
  const below: DeserializeMiddleware<object, MetadataBearer> =
    (next, context: HandlerExecutionContext) => async (args) => {
      const command = context.commandName ?? '';
      await addLatency(config, random, sleep, deps.counter);
      if (config.sqsSendFail > 0 && SQS_SENDS.has(command) && random() < config.sqsSendFail) {
        deps.counter.record('sqsSendFail');
        throw new SQSServiceException({
          name: 'InternalError',
          $fault: 'server',
          $metadata: metadata(500),
          message: `injected: ${command} failed with a 500 before reaching the queue`,
        });
      }
      return next(args);
    };
  client.middlewareStack.add(below, BELOW_RETRY);

  const duplicated = new Set(options.duplicateQueueUrls ?? []);
  if (!config.duplicateKicks || duplicated.size === 0) return;
  const above: InitializeMiddleware<object, MetadataBearer> =
    (next, context: HandlerExecutionContext) => async (args) => {
      const result = await next(args);
      const input = args.input as { QueueUrl?: string; DelaySeconds?: number };
      if (context.commandName !== 'SendMessageCommand' || !duplicated.has(input.QueueUrl ?? '')) return result;
      const extraS = Math.floor(random() * (config.duplicateDelayMaxS + 1));
      const delaySeconds = Math.min(900, (input.DelaySeconds ?? 0) + extraS);
      try {
        await next({ ...args, input: { ...input, DelaySeconds: delaySeconds } });
        deps.counter.record('duplicateKicks');
      } catch {
        // The duplicate is extra: its failure changes nothing the caller relies on.
      }
      return result;
    };
  client.middlewareStack.add(above, ABOVE_RETRY);
}

async function addLatency(
  config: FaultConfig,
  random: () => number,
  sleep: (ms: number) => Promise<void>,
  counter: FaultCounter,
): Promise<void> {
  if (config.latencyMs <= 0) return;
  const ms = Math.floor(random() * (config.latencyMs + 1));
  if (ms <= 0) return;
  counter.record('latency');
  await sleep(ms);
}

/** Both throttling errors DynamoDB answers with, half the time each. */
function throttle(command: string, pick: number): Error {
  const message = `injected: ${command} throttled`;
  return pick < 0.5
    ? new ProvisionedThroughputExceededException({ message, $metadata: metadata(400) })
    : new ThrottlingException({ message, $metadata: metadata(400) });
}

const dynamoServerError = (message: string): Error => new InternalServerError({ message, $metadata: metadata(500) });
