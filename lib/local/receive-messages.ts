import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** A message as the dev tooling reads it: its body and the string message attributes asked for. */
export interface ReceivedMessage {
  readonly body: string;
  readonly attributes: Readonly<Record<string, string | undefined>>;
}

export interface ReceiveOptions {
  /** Long-poll wait; 0 returns at once. */
  readonly waitTimeSeconds: number;
  /** Message attributes to return (string values). */
  readonly attributeNames?: readonly string[] | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** SQS returns at most 10 messages per receive. */
const RECEIVE_MAX = 10;

/**
 * One receive from a queue the tooling consumes (results, dead letters), deleting what it read:
 * the consumer keeps what it needs. The one SQS receive loop body of the demo, the chaos runner
 * and the test fixtures.
 */
export async function receiveAndDelete(
  sqs: SQSClient,
  queueUrl: string,
  options: ReceiveOptions,
): Promise<ReceivedMessage[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: RECEIVE_MAX,
      WaitTimeSeconds: options.waitTimeSeconds,
      ...(options.attributeNames?.length ? { MessageAttributeNames: [...options.attributeNames] } : {}),
    }),
    options.signal ? { abortSignal: options.signal } : {},
  );
  if (Messages.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
  return Messages.map((m) => ({
    body: m.Body ?? '',
    attributes: Object.fromEntries(
      (options.attributeNames ?? []).map((name) => [name, m.MessageAttributes?.[name]?.StringValue]),
    ),
  }));
}

/** Receives (and deletes) everything on the queue right now: until two receives in a row come back empty. */
export async function drainQueue(sqs: SQSClient, queueUrl: string): Promise<ReceivedMessage[]> {
  const all: ReceivedMessage[] = [];
  let emptyPolls = 0;
  while (emptyPolls < 2) {
    const messages = await receiveAndDelete(sqs, queueUrl, { waitTimeSeconds: emptyPolls === 0 ? 0 : 1 });
    if (messages.length === 0) emptyPolls++;
    else emptyPolls = 0;
    all.push(...messages);
  }
  return all;
}
