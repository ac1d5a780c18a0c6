import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { admitStream, type StreamAdmission } from '../../core/stream-slots.ts';
import type { StreamSlotStore } from '../../ports/stream-slots.ts';

/**
 * One item per caller in the session table, beside (never among) the sessions, which no index
 * or session read sees (no `sid`, no `tenant`, no `S#` key):
 *
 *   stream slots  pk STREAMS#{holder}  sk SLOTS   slots = { streamId: until }, version, ttl
 *
 * A slot, not a counter: a counter that an invocation increments and then dies before
 * decrementing (a timeout, a crash) stays high for good; a slot carries the time its stream's
 * invocation must have ended by, so a lost close frees itself.
 */
const SLOTS_SK = 'SLOTS';
const pkOf = (holder: string) => `STREAMS#${holder}`;
/** Writers racing on one caller's item re-read and try again this often before refusing. */
const MAX_ATTEMPTS = 5;
/** The item outlives its last slot by this much before the table's TTL may delete it; the slots' own times decide. */
const TTL_GRACE_SECONDS = 3_600;

const SlotsItem = z.object({
  slots: z.record(z.string(), z.number()).default({}),
  version: z.number().int().nonnegative().default(0),
});

export interface DynamoDbStreamSlotsOptions {
  readonly client: DynamoDBDocumentClient;
  readonly table: string;
}

/**
 * The stream slot store on the session table: an open is one consistent read and one write
 * conditioned on the version read; a close is one update.
 * @example new DynamoDbStreamSlots({ client: createDocumentClient({ region }), table })
 */
export class DynamoDbStreamSlots implements StreamSlotStore {
  readonly #db: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(options: DynamoDbStreamSlotsOptions) {
    this.#db = options.client;
    this.#table = options.table;
  }

  async open(
    holder: string,
    slot: { readonly id: string; readonly until: number; readonly now: number; readonly limit: number },
  ): Promise<StreamAdmission> {
    const key = { pk: pkOf(holder), sk: SLOTS_SK };
    let open = 0;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const read = await this.#db.send(new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true }));
      // A malformed item is a caller with no slots we can read: it is replaced, never trusted.
      const parsed = SlotsItem.safeParse(read.Item ?? {});
      const { slots, version } = parsed.success ? parsed.data : { slots: {}, version: 0 };
      const admission = admitStream(slots, slot);
      if (!admission.admitted) return admission;
      open = Object.keys(admission.slots).length;
      const lastUntil = Math.max(...Object.values(admission.slots));
      try {
        await this.#db.send(
          new PutCommand({
            TableName: this.#table,
            Item: {
              ...key,
              slots: admission.slots,
              version: version + 1,
              ttl: Math.ceil(lastUntil / 1_000) + TTL_GRACE_SECONDS,
            },
            ...unchangedSince(read.Item),
          }),
        );
        return admission;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    // The caller's own streams opened and closed faster than it could take a slot: it is at its bound.
    return { admitted: false, open, freeAt: slot.now + 1_000 };
  }

  async close(holder: string, id: string): Promise<void> {
    try {
      await this.#db.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: pkOf(holder), sk: SLOTS_SK },
          // The version moves, so an open that read the slot still there writes nothing stale back.
          UpdateExpression: 'REMOVE #slots.#id ADD #version :one',
          ConditionExpression: 'attribute_exists(#slots.#id)',
          ExpressionAttributeNames: { '#slots': 'slots', '#id': id, '#version': 'version' },
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}

/** The condition that the item is as it was read: absent, or at the version read (or still without one). */
function unchangedSince(item: Record<string, unknown> | undefined) {
  if (item === undefined)
    return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
  if (typeof item.version !== 'number')
    return {
      ConditionExpression: 'attribute_not_exists(#version)',
      ExpressionAttributeNames: { '#version': 'version' },
    };
  return {
    ConditionExpression: '#version = :version',
    ExpressionAttributeNames: { '#version': 'version' },
    ExpressionAttributeValues: { ':version': item.version },
  };
}
