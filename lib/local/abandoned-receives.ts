import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  ChangeMessageVisibilityBatchCommand,
  ListQueuesCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/**
 * Makes the in-process fauxqs give back what it answers to a long poll whose client has gone.
 * fauxqs keeps a poll's waiter when its connection closes, so the next message goes to nobody and
 * stays in flight for the queue's visibility timeout (6 minutes in `baton dev`): a ticket sent just
 * after a `--watch` reload or a worker's restart was run minutes late, and `--wait` gave up on it.
 * Lambda's pollers never walk away; a local worker's last poll does whenever the worker stops.
 * The answer names receipt handles but not the queue, so each queue is asked: a handle is unique.
 */
export function releaseAbandonedReceives(server: Server, sqs: () => SQSClient): void {
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers['x-amz-target'] !== 'AmazonSQS.ReceiveMessage') return;
    let gone = false;
    response.once('close', () => {
      gone ||= !response.writableEnded;
    });
    const end = response.end;
    response.end = function (this: ServerResponse, ...args: unknown[]) {
      if (gone || request.socket.destroyed) {
        const handles = receiptHandles(args[0]);
        if (handles.length > 0) void giveBack(sqs(), handles).catch(() => undefined);
      }
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof response.end;
  });
}

/** The receipt handles of a ReceiveMessage answer (AWS JSON protocol), none for anything else. */
function receiptHandles(body: unknown): string[] {
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return [];
  try {
    const { Messages = [] } = JSON.parse(body.toString()) as { Messages?: Message[] };
    return Messages.flatMap((m) => (m.ReceiptHandle ? [m.ReceiptHandle] : []));
  } catch {
    return [];
  }
}

/** Makes the messages visible again at once, on whichever queue holds them. */
async function giveBack(sqs: SQSClient, handles: readonly string[]): Promise<void> {
  const { QueueUrls = [] } = await sqs.send(new ListQueuesCommand({}));
  const entries = handles.map((ReceiptHandle, i) => ({ Id: String(i), ReceiptHandle, VisibilityTimeout: 0 }));
  await Promise.all(
    QueueUrls.map((QueueUrl) =>
      sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl, Entries: entries })).catch(() => undefined),
    ),
  );
}
