import type { SQSClient } from '@aws-sdk/client-sqs';
import { ATTR_RESULT_ID, Result } from '../core/messages.ts';
import { receiveAndDelete } from '../local/receive-messages.ts';

/** A result as the demo received it from the results queue. */
export interface ReceivedResult {
  readonly result: Result;
  readonly receivedAt: number;
  /** Copies of this result delivered after the first (results are at least once). */
  readonly duplicates: number;
}

/** Short polls keep the view live. */
const RECEIVE_WAIT_S = 1;

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
    const messages = await receiveAndDelete(this.sqs, this.queueUrl, {
      waitTimeSeconds: RECEIVE_WAIT_S,
      attributeNames: [ATTR_RESULT_ID],
      signal,
    });
    const now = Date.now();
    for (const message of messages) {
      let parsed: ReturnType<typeof Result.safeParse>;
      try {
        parsed = Result.safeParse(JSON.parse(message.body));
      } catch {
        this.invalid.push(message.body);
        continue;
      }
      if (!parsed.success) {
        this.invalid.push(message.body);
        continue;
      }
      const id = message.attributes[ATTR_RESULT_ID] ?? `${parsed.data.sessionId}/${parsed.data.turnId}`;
      const seen = this.#results.get(id);
      this.#results.set(
        id,
        seen ? { ...seen, duplicates: seen.duplicates + 1 } : { result: parsed.data, receivedAt: now, duplicates: 0 },
      );
    }
    return messages.length;
  }
}
