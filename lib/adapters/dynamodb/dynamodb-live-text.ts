import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import type { SessionKey } from '../../core/ids.ts';
import type { LiveTextChunk, LiveTextStore } from '../../ports/live-text.ts';
import { pkOf } from '../session-item-codec.ts';

/**
 * Live text items sit in the session table under the session's pk, beside (never inside) the
 * journal's range, so no journal query reads them:
 *
 *   live text  pk S#{tenant}#{agent}#{id}  sk L#{seq, 12 digits}#{index, 6 digits}   ttl = expiry
 */
const SEQ_DIGITS = 12;
const INDEX_DIGITS = 6;
const MAX_INDEX = 10 ** INDEX_DIGITS - 1;

const liveTextSk = (seq: number, index: number): string =>
  `L#${String(seq).padStart(SEQ_DIGITS, '0')}#${String(index).padStart(INDEX_DIGITS, '0')}`;

const LiveTextItem = z.object({
  seq: z.number().int().nonnegative(),
  turnId: z.string(),
  index: z.number().int().nonnegative(),
  text: z.string(),
  expiresAt: z.number(),
});

export interface DynamoDbLiveTextOptions {
  readonly client: DynamoDBDocumentClient;
  readonly table: string;
}

/**
 * The live text store on the session table: one small put per coalesced chunk, expired by the
 * table's TTL, read with one eventually consistent query per follower poll.
 * @example new DynamoDbLiveText({ client: createDocumentClient({ region }), table })
 */
export class DynamoDbLiveText implements LiveTextStore {
  readonly #db: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(options: DynamoDbLiveTextOptions) {
    this.#db = options.client;
    this.#table = options.table;
  }

  async put(session: SessionKey, chunk: LiveTextChunk, expiresAt: number): Promise<void> {
    if (!Number.isInteger(chunk.index) || chunk.index < 0 || chunk.index > MAX_INDEX)
      throw new RangeError(`live text chunk index must be a whole number up to ${MAX_INDEX}, got ${chunk.index}`);
    await this.#db.send(
      new PutCommand({
        TableName: this.#table,
        Item: {
          pk: pkOf(session),
          sk: liveTextSk(chunk.seq, chunk.index),
          seq: chunk.seq,
          turnId: chunk.turnId,
          index: chunk.index,
          text: chunk.text,
          expiresAt,
          ttl: Math.ceil(expiresAt / 1000),
        },
      }),
    );
  }

  async read(
    session: SessionKey,
    seq: number,
    options: { readonly after?: number | undefined; readonly now: number },
  ): Promise<LiveTextChunk[]> {
    const from = (options.after ?? -1) + 1;
    if (from > MAX_INDEX) return [];
    const chunks: LiveTextChunk[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.#db.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to',
          ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
          ExpressionAttributeValues: {
            ':pk': pkOf(session),
            ':from': liveTextSk(seq, from),
            ':to': liveTextSk(seq, MAX_INDEX),
          },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const raw of page.Items ?? []) {
        const item = LiveTextItem.safeParse(raw);
        // Nothing decides on live text, so a malformed item is skipped rather than failing a follower.
        if (!item.success || item.data.seq !== seq || raw.sk !== liveTextSk(seq, item.data.index)) continue;
        // The table's TTL deletes lazily: an expired chunk may still be there.
        if (item.data.expiresAt <= options.now) continue;
        chunks.push({ seq, turnId: item.data.turnId, index: item.data.index, text: item.data.text });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return chunks;
  }
}
