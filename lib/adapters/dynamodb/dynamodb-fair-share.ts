import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { FairShareStore, FairShareWrite, VersionedItem } from '../../ports/fair-share.ts';

/**
 * Fair sharing's items in the session table, beside (never among) the sessions, which no index
 * or session read sees (no `sid`, no `tenant` attribute, no `S#` key):
 *
 *   tenant slots   pk TENANT#{tenant}  sk SLOTS         data = { running, waiting }, version, ttl
 *   token bucket   pk TENANT#{tenant}  sk RATE#{scope}  data = { tokens, at }, version, ttl
 *
 * One item per tenant keeps every slot decision a single conditional write: no transaction, no
 * counter that a dead writer leaves high (the slots name their holders, who can be checked).
 */
const pkOf = (tenant: string) => `TENANT#${tenant}`;

export interface DynamoDbFairShareOptions {
  readonly client: DynamoDBDocumentClient;
  readonly table: string;
}

/**
 * The fair-share items on the session table: a read is one consistent GetItem, a write one
 * PutItem conditioned on the version read.
 * @example new DynamoDbFairShare({ client: createDocumentClient({ region }), table })
 */
export class DynamoDbFairShare implements FairShareStore {
  readonly #db: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(options: DynamoDbFairShareOptions) {
    this.#db = options.client;
    this.#table = options.table;
  }

  async get(tenant: string, name: string): Promise<VersionedItem | undefined> {
    const read = await this.#db.send(
      new GetCommand({ TableName: this.#table, Key: { pk: pkOf(tenant), sk: name }, ConsistentRead: true }),
    );
    if (!read.Item) return undefined;
    // A version that is not a count is an item no writer of ours made: read as version 0, replaced on write.
    const version = typeof read.Item.version === 'number' ? read.Item.version : 0;
    return { data: read.Item.data, version };
  }

  async put(tenant: string, name: string, write: FairShareWrite): Promise<boolean> {
    try {
      await this.#db.send(
        new PutCommand({
          TableName: this.#table,
          Item: {
            pk: pkOf(tenant),
            sk: name,
            data: write.data,
            version: (write.expectVersion ?? 0) + 1,
            writeId: write.writeId,
            ttl: write.ttlSeconds,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...(write.expectVersion === undefined
            ? { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } }
            : {
                ConditionExpression: '#version = :version',
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':version': write.expectVersion },
              }),
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Our own write, committed by an attempt the SDK retried, is no conflict.
      return error.Item?.writeId?.S === write.writeId;
    }
  }
}
