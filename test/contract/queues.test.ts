import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { createSqsClient } from '../../lib/adapters/aws-clients.ts';
import { ManualClock } from '../../lib/adapters/memory/manual-clock.ts';
import {
  MemoryResultPublisher,
  MemoryTicketQueue,
  MemoryWorkQueue,
  type SentMessage,
} from '../../lib/adapters/memory/memory-queues.ts';
import { SqsResultPublisher, SqsTicketQueue, SqsWorkQueue } from '../../lib/adapters/sqs/sqs-queues.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { AWS_TRACE_HEADER_SHIM_ATTRIBUTE, addAwsTraceHeaderShim } from '../../lib/local/aws-trace-header-shim.ts';
import { describeQueueContract, type QueueName, type ReceivedMessage } from './queues.contract.ts';

const { endpoints, region } = inject('baton');

describeQueueContract('in-memory queues', () => {
  const clock = new ManualClock();
  const workQueue = new MemoryWorkQueue({ clock });
  const results = new MemoryResultPublisher({ clock });
  const tickets = new MemoryTicketQueue({ clock });
  const receivers: Record<QueueName, () => SentMessage<unknown>[]> = {
    work: () => workQueue.receive(),
    results: () => results.receive(),
    tickets: () => tickets.receive(),
  };
  return {
    workQueue,
    results,
    tickets,
    receive: async (queue) =>
      receivers[queue]().map((message) => ({
        body: JSON.parse(JSON.stringify(message.body)),
        attributes: message.attributes,
        awsTraceHeader: message.awsTraceHeader,
      })),
    elapse: async (ms) => clock.advance(ms),
  };
});

// fauxqs drops the AWSTraceHeader system attribute; locally the composition root applies the
// shim and the event-source mapping reads it back, which this harness mirrors.
const sqs = addAwsTraceHeaderShim(createSqsClient({ region, endpoints, credentials: LOCAL_CREDENTIALS }));

async function createQueue(client: SQSClient, name: string): Promise<string> {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name }));
  if (QueueUrl === undefined) throw new Error(`no URL for queue ${name}`);
  return QueueUrl;
}

async function receiveAll(client: SQSClient, queueUrl: string): Promise<ReceivedMessage[]> {
  const { Messages = [] } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['AWSTraceHeader'],
    }),
  );
  const received: ReceivedMessage[] = [];
  for (const message of Messages) {
    await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
    const attributes: Record<string, string> = {};
    for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
      if (name !== AWS_TRACE_HEADER_SHIM_ATTRIBUTE && value.StringValue !== undefined)
        attributes[name] = value.StringValue;
    }
    received.push({
      body: JSON.parse(message.Body ?? 'null'),
      attributes,
      awsTraceHeader:
        message.Attributes?.AWSTraceHeader ?? message.MessageAttributes?.[AWS_TRACE_HEADER_SHIM_ATTRIBUTE]?.StringValue,
    });
  }
  return received;
}

describeQueueContract('SQS adapters on fauxqs', async () => {
  const suffix = randomUUID().slice(0, 8);
  const [work, results, tickets] = await Promise.all(
    (['work', 'results', 'tickets'] as const).map((name) => createQueue(sqs, `contract-${name}-${suffix}`)),
  );
  const urls: Record<QueueName, string> = {
    work: work as string,
    results: results as string,
    tickets: tickets as string,
  };
  return {
    workQueue: new SqsWorkQueue({ client: sqs, queueUrl: urls.work }),
    results: new SqsResultPublisher({ client: sqs, queueUrl: urls.results }),
    tickets: new SqsTicketQueue({ client: sqs, queueUrl: urls.tickets }),
    receive: (queue) => receiveAll(sqs, urls[queue]),
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
});
