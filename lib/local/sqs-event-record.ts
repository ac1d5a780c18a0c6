import { createHash } from 'node:crypto';
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttribute, SQSRecord } from 'aws-lambda';
import { AWS_TRACE_HEADER_SHIM_ATTRIBUTE } from './aws-trace-header-shim.ts';

export interface RecordSource {
  readonly queueArn: string;
  readonly region: string;
}

/**
 * Turns a received SQS message into the record Lambda's SQS event source delivers: lower-camel
 * keys, string attributes, `stringListValues`/`binaryListValues` always present, binary values in
 * base64. The `AWSTraceHeader` shim attribute moves into `attributes.AWSTraceHeader`.
 */
export function toSqsRecord(message: Message, source: RecordSource): SQSRecord {
  const received = message.Attributes ?? {};
  const messageAttributes: Record<string, MessageAttributeValue> = { ...message.MessageAttributes };
  const shim = messageAttributes[AWS_TRACE_HEADER_SHIM_ATTRIBUTE];
  delete messageAttributes[AWS_TRACE_HEADER_SHIM_ATTRIBUTE];
  const traceHeader = received.AWSTraceHeader ?? shim?.StringValue;

  const attributes: SQSRecord['attributes'] = {
    ApproximateReceiveCount: received.ApproximateReceiveCount ?? '1',
    ...(traceHeader === undefined ? {} : { AWSTraceHeader: traceHeader }),
    SentTimestamp: received.SentTimestamp ?? '',
    SenderId: received.SenderId ?? '',
    ApproximateFirstReceiveTimestamp: received.ApproximateFirstReceiveTimestamp ?? '',
    ...(received.SequenceNumber === undefined ? {} : { SequenceNumber: received.SequenceNumber }),
    ...(received.MessageGroupId === undefined ? {} : { MessageGroupId: received.MessageGroupId }),
    ...(received.MessageDeduplicationId === undefined
      ? {}
      : { MessageDeduplicationId: received.MessageDeduplicationId }),
  };

  const hasAttributes = Object.keys(messageAttributes).length > 0;
  const md5OfMessageAttributes =
    shim === undefined
      ? message.MD5OfMessageAttributes
      : hasAttributes
        ? md5OfAttributes(messageAttributes)
        : undefined;
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    messageAttributes: Object.fromEntries(
      Object.entries(messageAttributes).map(([name, value]) => [name, toRecordAttribute(value)]),
    ),
    md5OfBody:
      message.MD5OfBody ??
      createHash('md5')
        .update(message.Body ?? '')
        .digest('hex'),
    ...(hasAttributes && md5OfMessageAttributes !== undefined ? { md5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: source.queueArn,
    awsRegion: source.region,
  };
}

function toRecordAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  return {
    ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
    ...(value.BinaryValue === undefined ? {} : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map((bytes) => Buffer.from(bytes).toString('base64')),
    dataType: value.DataType ?? 'String',
  };
}

/** SQS's MD5 of message attributes: names sorted, each field length-prefixed, 1 = string, 2 = binary. */
export function md5OfAttributes(attributes: Record<string, MessageAttributeValue>): string {
  const hash = createHash('md5');
  const lengthPrefixed = (bytes: Uint8Array) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name] as MessageAttributeValue;
    lengthPrefixed(Buffer.from(name, 'utf8'));
    lengthPrefixed(Buffer.from(value.DataType ?? 'String', 'utf8'));
    if (value.BinaryValue !== undefined) {
      hash.update(Buffer.from([2]));
      lengthPrefixed(value.BinaryValue);
    } else {
      hash.update(Buffer.from([1]));
      lengthPrefixed(Buffer.from(value.StringValue ?? '', 'utf8'));
    }
  }
  return hash.digest('hex');
}
