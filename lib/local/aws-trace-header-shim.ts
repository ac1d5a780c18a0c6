import type {
  MessageAttributeValue,
  SendMessageBatchRequest,
  SendMessageRequest,
  SQSClient,
} from '@aws-sdk/client-sqs';

/**
 * The message attribute that carries the X-Ray header locally. fauxqs drops the `AWSTraceHeader`
 * system attribute (it ignores `MessageSystemAttributes` on send); the local event-source mapping
 * moves this attribute back into `record.attributes.AWSTraceHeader`, where Lambda presents it.
 */
export const AWS_TRACE_HEADER_SHIM_ATTRIBUTE = 'AWSTraceHeader';

const SHIM_MIDDLEWARE_NAME = 'batonAwsTraceHeaderShim';

interface SendEntry {
  MessageSystemAttributes?: Record<string, { StringValue?: string | undefined } | undefined> | undefined;
  MessageAttributes?: Record<string, MessageAttributeValue> | undefined;
}

/** Copies `MessageSystemAttributes.AWSTraceHeader` into the shim message attribute of one entry. */
export function withAwsTraceHeaderShim<T extends SendEntry>(entry: T): T {
  const traceHeader = entry.MessageSystemAttributes?.AWSTraceHeader?.StringValue;
  if (traceHeader === undefined || entry.MessageAttributes?.[AWS_TRACE_HEADER_SHIM_ATTRIBUTE] !== undefined) {
    return entry;
  }
  return {
    ...entry,
    MessageAttributes: {
      ...entry.MessageAttributes,
      [AWS_TRACE_HEADER_SHIM_ATTRIBUTE]: { DataType: 'String', StringValue: traceHeader },
    },
  };
}

/**
 * Adds SDK middleware that, on SendMessage and SendMessageBatch, copies the `AWSTraceHeader`
 * system attribute into a message attribute of the same name. Only for local emulators: on real
 * SQS the system attribute arrives by itself and the shim would spend one of the 10 attributes.
 * Idempotent: applying it twice to one client adds it once.
 * @example const sqs = new SQSClient({}); if (isLocal) addAwsTraceHeaderShim(sqs);
 */
export function addAwsTraceHeaderShim(client: SQSClient): SQSClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'SendMessageCommand') {
        return next({ ...args, input: withAwsTraceHeaderShim(args.input as SendMessageRequest) });
      }
      if (context.commandName === 'SendMessageBatchCommand') {
        const input = args.input as SendMessageBatchRequest;
        return next({ ...args, input: { ...input, Entries: input.Entries?.map(withAwsTraceHeaderShim) } });
      }
      return next(args);
    },
    { step: 'initialize', name: SHIM_MIDDLEWARE_NAME, override: true },
  );
  return client;
}
