import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ATTR_RESULT_ID, Result } from '../core/messages.ts';

/** A result as the demo received it from the results queue. */
export interface ReceivedResult {
  readonly result: Result;
  readonly receivedAt: number;
  /** Copies of this result delivered after the first (results are at least once). */
  readonly duplicates: number;
}

/** Short polls keep the view live; SQS returns at most 10 messages per receive. */
const RECEIVE_WAIT_S = 1;
const RECEIVE_MAX = 10;

/**
 * Consumes the results queue as a downstream consumer would: validates each message against the
 * Result contract, keeps the first per `baton-result-id` and deletes what it read.
 */
export class ResultsReader {
  readonly #results = new Map<string, ReceivedResult>();
  /** Messages that did not match the Result contract: the demo fails when there is any. */
  readonly invalid: string[] = [];

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  /** Results received so far, keyed by session id. */
  get bySession(): ReadonlyMap<string, ReceivedResult> {
    return new Map([...this.#results.values()].map((r) => [r.result.sessionId, r]));
  }

  /** One receive; returns how many messages came. */
  async poll(signal?: AbortSignal): Promise<number> {
    const { Messages = [] } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: RECEIVE_MAX,
        WaitTimeSeconds: RECEIVE_WAIT_S,
        MessageAttributeNames: [ATTR_RESULT_ID],
      }),
      signal ? { abortSignal: signal } : {},
    );
    const now = Date.now();
    for (const message of Messages) {
      let parsed: ReturnType<typeof Result.safeParse>;
      try {
        parsed = Result.safeParse(JSON.parse(message.Body ?? ''));
      } catch {
        this.invalid.push(message.Body ?? '');
        continue;
      }
      if (!parsed.success) {
        this.invalid.push(message.Body ?? '');
        continue;
      }
      const id =
        message.MessageAttributes?.[ATTR_RESULT_ID]?.StringValue ?? `${parsed.data.sessionId}/${parsed.data.turnId}`;
      const seen = this.#results.get(id);
      this.#results.set(
        id,
        seen ? { ...seen, duplicates: seen.duplicates + 1 } : { result: parsed.data, receivedAt: now, duplicates: 0 },
      );
    }
    if (Messages.length > 0) {
      await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      );
    }
    return Messages.length;
  }
}
